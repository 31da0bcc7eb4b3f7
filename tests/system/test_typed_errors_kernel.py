"""Each typed error, on reads and on writes, where the real kernel produces it.

Reads: CgroupFiles.read (one-shot) and the kept-fd pool; writes: the executor (the
daemon's only write door) and the file-IO layer underneath it."""

from __future__ import annotations

import errno

import pytest

from resourceexecutor import KeptFdFileIO, KernelFileIO, Outcome, ResourceExecutor
from system.errors import Gone, KernelRejected, NotSupported
from system.file_io import KeptFdPool, read_path_text, write_path_text
from system.host import Host
from tests.system.cgroup_sandbox import make_child
from tests.system.test_kernel_cgroups import files  # noqa: F401  (the v1 host fixture)

pytestmark = pytest.mark.kernel

HOST = Host()


@pytest.fixture(params=[KernelFileIO, KeptFdFileIO])
def executor(request, files):
    made = ResourceExecutor(files, io=request.param())
    yield made
    made.close()


# ---------------------------------------------------------------- Gone

def test_reading_a_removed_cgroup_is_gone(files, cgroup_sandbox_dir):
    child = cgroup_sandbox_dir + "/short-lived"
    make_child(HOST, child, [HOST.cgroup("cpu")])
    path = str(files.path("cpu.shares", child))
    with KeptFdPool() as pool:
        assert pool.read(path).strip() == "1024"
        HOST.cgroup("cpu", child).rmdir()
        with pytest.raises(Gone):
            pool.read(path)  # kept fd: ENODEV, reopened once: ENOENT in a missing dir
    with pytest.raises(Gone):
        files.read("cpu.shares", child)


def test_writing_a_removed_cgroup_is_gone(files, executor, cgroup_sandbox_dir):
    child = cgroup_sandbox_dir + "/short-lived"
    make_child(HOST, child, [HOST.cgroup("cpu")])
    assert executor.update(executor.updater("cpu.shares", child, 512)).outcome is Outcome.WRITTEN
    HOST.cgroup("cpu", child).rmdir()
    result = executor.update(executor.updater("cpu.shares", child, 256), use_cache=False)
    assert result.outcome is Outcome.GONE and isinstance(result.error, Gone)


# ---------------------------------------------------------------- NotSupported

def test_a_file_this_kernel_lacks_is_not_supported_on_read_and_write(files, executor,
                                                                      cgroup_sandbox_dir):
    if files.path("cpu.bvt_warp_ns", cgroup_sandbox_dir).exists():
        pytest.skip("this kernel has group identity (Anolis)")
    with pytest.raises(NotSupported):
        files.read("cpu.bvt_warp_ns", cgroup_sandbox_dir)
    with pytest.raises(NotSupported):
        read_path_text(str(files.path("cpu.bvt_warp_ns", cgroup_sandbox_dir)))
    result = executor.update(executor.updater("cpu.bvt_warp_ns", cgroup_sandbox_dir, 2))
    assert result.outcome is Outcome.NOT_SUPPORTED and isinstance(result.error, NotSupported)


# ---------------------------------------------------------------- KernelRejected

def test_reading_a_write_only_kernel_file_is_kernel_rejected(files, cgroup_sandbox_dir):
    path = str(files.subsystem_dir("memory", cgroup_sandbox_dir) / "memory.force_empty")
    with pytest.raises(KernelRejected) as info:
        read_path_text(path)
    assert info.value.errno == errno.EINVAL  # root may open it; the read itself is refused
    with KeptFdPool() as pool, pytest.raises(KernelRejected) as kept:
        pool.read(path)
    assert kept.value.errno == errno.EINVAL


def test_a_value_the_kernel_refuses_is_kernel_rejected_with_its_errno(files, executor,
                                                                       cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    with pytest.raises(KernelRejected) as info:
        write_path_text(str(files.path("cpu.cfs_quota_us", cg)), "500")  # below 1 ms
    assert info.value.errno == errno.EINVAL
    missing_cpu = max(files.read("cpuset.cpus", "")) + 64
    result = executor.update(executor.updater("cpuset.cpus", cg, frozenset({missing_cpu})))
    assert result.outcome is Outcome.FAILED
    assert isinstance(result.error, KernelRejected)
    assert result.error.errno in (errno.EINVAL, errno.ERANGE)
    assert files.read("cpu.cfs_quota_us", cg) == -1  # nothing half-written
