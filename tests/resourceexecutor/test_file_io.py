"""The file door: typed errors, and the kept-fd IO's lifetime rules."""
from __future__ import annotations

import os
import uuid

import pytest

from resourceexecutor.file_io import KeptFdFileIO, KernelFileIO, TextBatch, default_max_open
from system import file_io as system_file_io
from system.errors import Gone, NotSupported
from system.host import Host
from tests.system.test_file_io import _files


@pytest.fixture(params=[KernelFileIO, KeptFdFileIO])
def io(request):
    made = request.param()
    yield made
    made.close()


def test_missing_dir_is_gone_and_missing_file_is_not_supported(io, tmp_path):
    with pytest.raises(Gone):
        io.write(str(tmp_path / "no-such-cgroup" / "cpu.shares"), "2")
    with pytest.raises(NotSupported):
        io.read(str(tmp_path / "cpu.nothing"))


def test_read_strips_the_kernel_newline(io, tmp_path):
    (tmp_path / "cpu.shares").write_text("1024\n")
    assert io.read(str(tmp_path / "cpu.shares")) == "1024"


def test_kept_fds_are_bounded(tmp_path):
    io = KeptFdFileIO(max_open=4)
    for path in _files(tmp_path, 10):
        io.write(path, "2")
    assert 1 <= len(io) <= 4
    io.close()
    assert len(io) == 0


def test_sweep_closes_fds_unused_since_the_previous_sweep(tmp_path):
    io = KeptFdFileIO()
    a, b = _files(tmp_path, 2)
    io.write(a, "2")
    io.write(b, "2")
    assert io.sweep() == 0          # both used in this period
    io.write(a, "3")
    assert io.sweep() == 1          # b idle for a whole period
    assert len(io) == 1
    io.close()


def test_release_closes_the_fds_of_a_cgroup_and_below(tmp_path):
    io = KeptFdFileIO()
    for path in _files(tmp_path, 3):
        io.write(path, "2")
    assert io.release(str(tmp_path / "c1")) == 1
    assert io.release(str(tmp_path / "c")) == 0   # whole components only
    assert len(io) == 2
    io.close()


def test_default_bound_is_half_the_fd_limit_within_the_cap():
    import resource
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert default_max_open(cap=7) == min(7, max(1, soft // 2))
    assert KeptFdFileIO().max_open == default_max_open()
    with pytest.raises(ValueError):
        KeptFdFileIO(max_open=0)


@pytest.mark.kernel
def test_kept_fd_follows_a_cgroup_recreated_under_the_same_name(cpu_memory_sandbox):
    box = cpu_memory_sandbox
    cgroup = box.make(box.dir("c"))
    path = str(box.files.path("cpu.shares", cgroup))
    io = KeptFdFileIO()
    try:
        io.write(path, "256")
        box.remove(cgroup)
        with pytest.raises(Gone):
            io.write(path, "512")       # kept fd answers ENODEV, fresh open finds no dir
        box.make(cgroup)
        io.write(path, "300")
        assert io.read(path) == "300"
        box.remove(cgroup)
        box.make(cgroup)                # again, with an fd still kept on the old one
        io.write(path, "400")
        assert box.files.read_text("cpu.shares", cgroup) == "400"
    finally:
        io.close()
    assert os.path.isdir(os.path.dirname(path))


def test_read_many_strips_each_file_and_answers_none_where_unreadable(io, tmp_path):
    (tmp_path / "cpu.shares").write_text("1024\n")
    (tmp_path / "cpu.max").write_text("max 100000\n")
    (tmp_path / "child").mkdir()
    paths = [str(tmp_path / name) for name in ("cpu.shares", "cpu.nothing", "cpu.max", "child")]
    assert io.read_many(paths) == ["1024", None, "max 100000", None]
    assert io.read_many([]) == []
    if isinstance(io, KeptFdFileIO):
        assert len(io) == 0  # the batch keeps no fd: the pool stays for the files written again


@pytest.mark.skipif(system_file_io._read_files is None, reason="the C reader's buffer: needs the extension")
def test_a_kept_reader_reserves_little_room_a_file_and_still_reads_long_files_whole(tmp_path, monkeypatch):
    short = [tmp_path / ("short%d" % i) for i in range(200)]
    for path in short:
        path.write_text("1024\n")
    lent: list = []
    monkeypatch.setattr(system_file_io, "_OUTPUTS", lent)  # the readers' buffers, this test's own
    read = TextBatch([str(path) for path in short])
    assert read() == ["1024"] * 200
    # the buffer lent to the read: 16 bytes a file besides the room of one longest file
    (output,) = lent
    assert output.cap <= 200 * 16 + system_file_io.BATCH_FILE_MAX
    cpus = ",".join("%d-%d" % (cpu, cpu + 1) for cpu in range(0, 40, 4))  # 49 bytes, 3 times the room
    long = [tmp_path / ("long%d" % i) for i in range(2000)]
    for path in long:
        path.write_text(cpus + "\n")
    assert TextBatch([str(path) for path in long])() == [cpus] * 2000


@pytest.mark.kernel
def test_read_many_reads_what_the_kernel_holds(io):
    cgroup = Host().cgroup("cpu") / ("koordlet-test-%s" % uuid.uuid4().hex[:8])
    cgroup.mkdir()
    try:
        (cgroup / "cpu.shares").write_text("512")
        paths = [str(cgroup / "cpu.shares"), str(cgroup / "cpu.cfs_quota_us")]
        assert io.read_many(paths) == ["512", "-1"]
    finally:
        cgroup.rmdir()
