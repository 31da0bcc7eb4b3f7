"""The one file-IO door: one-shot reads/writes and the shared kept-fd pool."""

from __future__ import annotations

import os

import pytest

from resourceexecutor import KeptFdFileIO, ResourceExecutor
from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader
from system.errors import Gone, InvalidValue, NotSupported
from system.file_io import KeptFdPool, read_path_text, write_path_text
from tests.system.fake_trees import add_cgroup, build_v1_tree


def _files(tmp_path, count):
    paths = []
    for i in range(count):
        path = tmp_path / ("c%d" % i) / "cpu.shares"
        path.parent.mkdir()
        path.write_text("1")
        paths.append(str(path))
    return paths


def test_one_shot_write_replaces_the_text_and_never_creates_a_file(tmp_path):
    path = tmp_path / "cpu.shares"
    path.write_text("1024\n")
    write_path_text(str(path), "2")
    assert read_path_text(str(path)) == "2"
    with pytest.raises(NotSupported):
        write_path_text(str(tmp_path / "cpu.sharez"), "2")
    assert not (tmp_path / "cpu.sharez").exists()
    with pytest.raises(Gone):
        write_path_text(str(tmp_path / "gone" / "cpu.shares"), "2")
    with pytest.raises(InvalidValue):
        write_path_text(str(path), "2é")
    assert read_path_text(str(path)) == "2"


def test_pool_evicts_the_least_recently_used_fd(tmp_path):
    a, b, c = _files(tmp_path, 3)
    with KeptFdPool(max_open=2) as pool:
        pool.read(a)
        pool.read(b)
        pool.read(a)  # a is now the most recent
        pool.read(c)  # evicts b, not a
        assert len(pool) == 2
        assert pool.release(os.path.dirname(b)) == 0
        assert pool.release(os.path.dirname(a)) == 1


def test_a_file_kept_for_reading_is_written_through_the_same_pool(tmp_path):
    (path,) = _files(tmp_path, 1)
    with KeptFdPool() as pool:
        assert pool.read(path) == "1"
        pool.write(path, "7")
        assert pool.read(path)[:1] == "7"
        assert len(pool) == 1


def test_readers_and_executor_share_one_pool_and_one_budget(tmp_path):
    host = build_v1_tree(tmp_path)
    for index in range(4):
        add_cgroup(host, "kubepods/pod%d" % index)
    files = CgroupFiles(host)
    pool = KeptFdPool(max_open=3)
    reader = CgroupReader(files, pool=pool)
    executor = ResourceExecutor(files, io=KeptFdFileIO(pool=pool))
    for index in range(4):
        reader.value("cpu.shares", "kubepods/pod%d" % index)
        executor.update(executor.updater("cpu.shares", "kubepods/pod%d" % index, 512))
    assert len(pool) == 3  # eight files touched, one budget
    reader.close()  # a borrowed pool is not the reader's to close
    assert len(pool) == 3
    executor.close()
    assert len(pool) == 0
