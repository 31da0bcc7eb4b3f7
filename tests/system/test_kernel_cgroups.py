"""Real-kernel tests: our own cgroups under the v1 controllers and unified/, always removed."""

from __future__ import annotations

import errno
import subprocess
import sys

import pytest

from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader
from system.cgroup_resource import get_resource
from system.cgroup_version import CgroupHierarchy, CgroupMode, detect_hierarchy
from system.errors import Gone, InvalidValue, KernelRejected
from system.host import Host
from system.procfs import read_proc_cgroups
from tests.system.cgroup_sandbox import SandboxUnavailable, cgroup_sandbox, make_child
from tests.system.door import write_raw, write_value

pytestmark = pytest.mark.kernel

HOST = Host()


@pytest.fixture
def files() -> CgroupFiles:
    try:
        hierarchy = detect_hierarchy(HOST)
    except Exception as exc:  # noqa: BLE001 - any failure here means no usable cgroups
        pytest.skip("no cgroup hierarchy: %s" % exc)
    if hierarchy.mode is CgroupMode.V2:
        pytest.skip("these tests target v1 controllers (this host is pure v2)")
    return CgroupFiles(HOST, hierarchy)


@pytest.fixture
def unified_files() -> CgroupFiles:
    """The unified/ hierarchy seen as a pure-v2 host (controllers as it offers them)."""
    root = HOST.cgroup("unified")
    if not (root / "cgroup.controllers").is_file():
        pytest.skip("no cgroup2 mount at %s" % root)
    controllers = frozenset((root / "cgroup.controllers").read_text().split())
    hierarchy = CgroupHierarchy(CgroupMode.V2, root, root, (), controllers)
    return CgroupFiles(Host(cgroup_root=root), hierarchy)


def _require(files: CgroupFiles, resource: str, cgroup: str) -> None:
    if not files.supported(resource, cgroup):
        pytest.skip("kernel lacks %s" % resource)


def test_cpu_controls_round_trip_through_the_registry(files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    write_value(files, "cpu.shares", cg, 512)
    write_value(files, "cpu.cfs_period_us", cg, 50000)
    write_value(files, "cpu.cfs_quota_us", cg, 25000)
    assert files.read("cpu.shares", cg) == 512
    assert CgroupReader(files, keep_open=False).cpu_max(cg).cpus == 0.5
    write_value(files, "cpu.cfs_quota_us", cg, -1)
    assert files.read("cpu.cfs_quota_us", cg) == -1


def test_quota_below_1000_is_refused_before_and_by_the_kernel(files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    with pytest.raises(InvalidValue):
        write_value(files, "cpu.cfs_quota_us", cg, 999)
    assert files.read("cpu.cfs_quota_us", cg) == -1
    with pytest.raises(KernelRejected) as info:
        write_raw(files, "cpu.cfs_quota_us", cg, "500")
    assert info.value.errno == errno.EINVAL


def test_optional_cpu_files(files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    _require(files, "cpu.cfs_burst_us", cg)
    write_value(files, "cpu.cfs_burst_us", cg, 0)
    assert files.read("cpu.cfs_burst_us", cg) == 0
    _require(files, "cpu.idle", cg)
    write_value(files, "cpu.idle", cg, 1)
    assert files.read("cpu.idle", cg) == 1
    write_value(files, "cpu.idle", cg, 0)
    if not files.supported("cpu.bvt_warp_ns", cg):
        assert not files.path("cpu.bvt_warp_ns", cg).exists()


def test_v1_cpuset_child_gets_a_valid_cpuset(files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    parent = files.read("cpuset.cpus", "")
    assert files.read("cpuset.cpus", cg) == parent
    cpu = min(parent)
    write_value(files, "cpuset.cpus", cg, frozenset({cpu}))
    assert files.read("cpuset.cpus", cg) == frozenset({cpu})
    assert files.read("cpuset.cpus.effective", cg) == frozenset({cpu})


def test_invalid_cpuset_is_refused_by_the_validator_first(files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    before = files.read_text("cpuset.cpus", cg)
    for bad in ("0-", "1-0", "a", "0,,1"):
        with pytest.raises(InvalidValue):
            write_value(files, "cpuset.cpus", cg, bad)
    assert files.read_text("cpuset.cpus", cg) == before


def test_cpuset_of_a_missing_cpu_is_kernel_rejected(files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    missing = max(files.read("cpuset.cpus", "")) + 64
    with pytest.raises(KernelRejected) as info:
        write_value(files, "cpuset.cpus", cg, frozenset({missing}))
    # beyond nr_cpu_ids the list parser says ERANGE; a possible-but-absent cpu is EINVAL
    assert info.value.errno in (errno.EINVAL, errno.ERANGE)
    with pytest.raises(KernelRejected):
        write_value(files, "cpuset.mems", cg, frozenset({63}))


def test_memory_limit_round_trip_and_unlimited(files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    write_value(files, "memory.limit_in_bytes", cg, 256 << 20)
    assert files.read("memory.limit_in_bytes", cg) == 256 << 20
    write_value(files, "memory.limit_in_bytes", cg, -1)
    assert files.read("memory.limit_in_bytes", cg) == -1
    write_value(files, "memory.soft_limit_in_bytes", cg, 64 << 20)
    assert files.read("memory.soft_limit_in_bytes", cg) == 64 << 20
    reader = CgroupReader(files)
    # working set = usage - inactive file pages: never above what the kernel charges
    assert reader.memory_working_set_bytes(cg) <= reader.value("memory.usage_in_bytes", cg)
    assert "total_inactive_file" in reader.memory_stat(cg)
    reader.close()


def _busy(seconds: float) -> subprocess.Popen:
    code = "import time\nend=time.time()+%f\nwhile time.time()<end: pass\n" % seconds
    return subprocess.Popen([sys.executable, "-c", code])


def test_process_attached_v1_and_unified_shows_usage(files, unified_files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    proc = _busy(0.4)
    try:
        write_value(files, "cgroup.procs", cg, proc.pid)
        write_raw(files, "cgroup.procs", cg, str(proc.pid))
        for sub in ("cpuacct", "cpuset", "memory"):
            (HOST.cgroup(sub, cg, "cgroup.procs")).write_text(str(proc.pid))
        write_value(unified_files, "cgroup.procs", cg, proc.pid)
        membership = read_proc_cgroups(HOST, proc.pid)
        assert membership.v1["cpu"] == "/" + cg
        assert membership.unified == "/" + cg
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader = CgroupReader(files, keep_open=False)
    assert reader.cpu_usage_ns(cg) > 100_000_000
    v2_reader = CgroupReader(unified_files, keep_open=False)
    assert v2_reader.cpu_usage_ns(cg) > 100_000_000
    psi = v2_reader.psi(cg, "cpu")
    assert 0.0 <= psi.some.avg10 <= 100.0 and psi.some.total_us <= 2 * 10**6  # < the test's run
    assert CgroupReader(files, keep_open=False).psi(cg, "memory").full is not None


def test_kept_fd_on_removed_cgroup_maps_to_gone(files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    child = cg + "/child"
    make_child(HOST, child, [HOST.cgroup("cpuacct")])
    reader = CgroupReader(files, keep_open=True)
    try:
        assert reader.cpu_usage_ns(child) == 0
        HOST.cgroup("cpuacct", child).rmdir()
        with pytest.raises(Gone):
            reader.cpu_usage_ns(child)
        with pytest.raises(Gone):
            write_value(files, "cpu.shares", cg + "/never-made", 2)
    finally:
        reader.close()


def test_kept_fd_follows_a_recreated_cgroup(files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    child = cg + "/again"
    make_child(HOST, child, [HOST.cgroup("cpu")])
    reader = CgroupReader(files, keep_open=True)
    try:
        write_value(files, "cpu.shares", child, 300)
        assert reader.cpu_shares(child) == 300
        HOST.cgroup("cpu", child).rmdir()
        make_child(HOST, child, [HOST.cgroup("cpu")])
        assert reader.cpu_shares(child) == 1024
    finally:
        reader.close()


def test_unified_cgroup_reads_through_v2_files(unified_files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    assert unified_files.read("cpuacct.usage", cg) == 0
    assert unified_files.read("cgroup.procs", cg) == ()
    assert unified_files.supported("cpu.pressure", cg)
    assert not unified_files.supported("memory.limit_in_bytes", cg) or (
        "memory" in unified_files.hierarchy.v2_controllers
    )


def test_sandbox_removes_everything_it_made():
    try:
        with cgroup_sandbox(controllers=("cpu", "cpuset")) as name:
            make_child(HOST, name + "/a", [HOST.cgroup("cpu"), HOST.cgroup("cpuset")])
            make_child(HOST, name + "/a/b", [HOST.cgroup("cpu")])
            proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
            try:
                HOST.cgroup("cpu", name, "a", "b", "cgroup.procs").write_text(str(proc.pid))
            except OSError:
                proc.kill()
                raise
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    try:
        for root in ("cpu", "cpuset", "unified"):
            assert not HOST.cgroup(root, name).exists()
        assert proc.poll() is None  # the sandbox kills nothing
        assert read_proc_cgroups(HOST, proc.pid).v1["cpu"] == "/"
    finally:
        proc.kill()
        proc.wait()


def test_raw_v1_cpuset_child_starts_empty(files, cgroup_sandbox_dir):
    raw = HOST.cgroup("cpuset", cgroup_sandbox_dir, "raw")
    raw.mkdir()
    try:
        assert files.read("cpuset.cpus", cgroup_sandbox_dir + "/raw") == frozenset()
        assert files.read("cpuset.mems", cgroup_sandbox_dir + "/raw") == frozenset()
    finally:
        raw.rmdir()


def test_written_values_match_what_the_kernel_shows(files, cgroup_sandbox_dir):
    cg = cgroup_sandbox_dir
    for name, value in (("cpu.shares", 1000), ("cpu.cfs_quota_us", 20000),
                        ("memory.limit_in_bytes", 128 << 20), ("memory.limit_in_bytes", -1)):
        write_value(files, name, cg, value)
        version = files.version_for(name)
        assert files.hierarchy.mode is not CgroupMode.V2
        assert files.read(name, cg) == value
        assert get_resource(name).matches(value, files.read_text(name, cg), version)


def test_hybrid_host_reads_pressure_of_our_cgroup(files, cgroup_sandbox_dir):
    if files.hierarchy.mode is not CgroupMode.HYBRID:
        pytest.skip("host is not hybrid")
    psi = CgroupReader(files).psi(cgroup_sandbox_dir, "io")
    assert psi.some.total_us == 0


def test_children_of_a_real_cgroup(files, cgroup_sandbox_dir):
    make_child(HOST, cgroup_sandbox_dir + "/kid", [HOST.cgroup("memory")])
    assert files.children(cgroup_sandbox_dir, "memory") == (cgroup_sandbox_dir + "/kid",)
    assert files.children(cgroup_sandbox_dir, "cpu") == ()
