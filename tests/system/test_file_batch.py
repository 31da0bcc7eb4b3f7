"""FileBatch: the same bytes as a one-shot read, file by file, with or without the C
reader; None for what cannot be read; no fd left open."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from system.file_io import ANCHOR_SHARE, BATCH_FILE_MAX, FileBatch, read_files_once, read_path_text


def files(tmp_path: Path) -> list[str]:
    texts = {"usage": "123456789\n", "stat": "nr_periods 5\nnr_throttled 2\nthrottled_time 9\n", "empty": "",
             "long": "x" * (BATCH_FILE_MAX * 2 + 3)}
    paths = []
    for name, text in texts.items():
        path = tmp_path / name
        path.write_text(text)
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("native", [True, False])
def test_a_batch_reads_what_a_one_shot_read_reads(tmp_path: Path, native: bool):
    paths = files(tmp_path)
    batch = FileBatch(paths + [str(tmp_path / "gone")], native=native)
    before = len(os.listdir("/proc/self/fd"))
    first, second = batch.read(), batch.read()  # buffers reused
    assert len(os.listdir("/proc/self/fd")) == before
    expected = [read_path_text(p).encode() for p in paths] + [None]
    assert first == expected
    assert second == expected
    # the path strings are dropped once packed (native): read back from the packed bytes
    assert batch.paths == tuple(paths + [str(tmp_path / "gone")]) and len(batch) == len(paths) + 1


@pytest.mark.parametrize("native", [True, False])
def test_a_batch_reads_texts_as_its_bytes_decoded_and_stripped(tmp_path: Path, native: bool):
    paths = files(tmp_path)
    odd = tmp_path / "odd"
    odd.write_bytes(b"\xff1\n")  # a byte ASCII has no letter for, ahead of the next file's offset
    paths.append(str(odd))
    paths.append(str(tmp_path / "gone"))
    tail = tmp_path / "tail"
    tail.write_text("  42 \n")
    paths.append(str(tail))
    batch = FileBatch(paths, native=native, bytes_per_file=8)  # a small first buffer, grown
    expected = [None if data is None else data.decode("ascii", "replace").strip() for data in batch.read()]
    assert batch.read_texts() == expected
    assert expected[-3:] == ["\ufffd1", None, "42"]
    assert len(expected[3]) == BATCH_FILE_MAX * 2 + 3  # the long file, read again whole
    assert FileBatch([]).read_texts() == []


def test_texts_read_again_unchanged_are_the_same_list_and_a_change_makes_a_new_one(tmp_path: Path):
    paths = [str(tmp_path / name) for name in ("a", "b", "gone")]
    Path(paths[0]).write_text("512\n")
    Path(paths[1]).write_text("0-1\n")
    batch = FileBatch(paths)
    first = batch.read_texts()
    assert batch.read_texts() is first and first == ["512", "0-1", None]
    Path(paths[1]).write_text("0-2\n")  # as long as before: only the bytes differ
    changed = batch.read_texts()
    assert changed is not first and changed == ["512", "0-2", None] and first == ["512", "0-1", None]
    Path(paths[2]).write_text("")  # a file that could not be read now can: its length differs
    assert batch.read_texts() == ["512", "0-2", ""]


def test_a_small_first_buffer_grows(tmp_path: Path):
    paths = [str(tmp_path / ("f%d" % i)) for i in range(40)]
    for i, path in enumerate(paths):
        Path(path).write_text(str(i) * 900)  # ~36 KiB in all: more than the first buffer
    assert FileBatch(paths).read() == [(str(i) * 900).encode() for i in range(40)]


def test_an_empty_batch(tmp_path: Path):
    assert FileBatch([]).read() == []


@pytest.mark.kernel
def test_real_cgroup_files_read_alike():
    paths = [p for p in ("/sys/fs/cgroup/cpu/cpu.shares", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                         "/sys/fs/cgroup/cpu/cpu.cfs_period_us", "/sys/fs/cgroup/unified/cgroup.controllers")
             if os.path.exists(p)]
    if not paths:
        pytest.skip("no cgroup files here")
    assert FileBatch(paths).read() == [read_path_text(p).encode() for p in paths]


def test_files_read_relative_to_the_directory_they_share(tmp_path: Path):
    paths = []
    for i in range(40):
        pod = tmp_path / "tier" / ("pod%d" % i)
        pod.mkdir(parents=True)
        (pod / "cpu.pressure").write_text("some avg10=0.%02d avg60=0.00 avg300=0.00 total=%d\n" % (i, i))
        paths.append(str(pod / "cpu.pressure"))
    paths.append(str(tmp_path / "tier" / "gone" / "cpu.pressure"))
    batch = FileBatch(paths)
    assert batch.read() == [read_path_text(p).encode() for p in paths[:-1]] + [None]
    (tmp_path / "tier").rename(tmp_path / "old")  # the shared directory replaced: read afresh
    (tmp_path / "tier" / "pod0").mkdir(parents=True)
    (tmp_path / "tier" / "pod0" / "cpu.pressure").write_text("new\n")
    assert batch.read()[:2] == [b"new\n", None]


def test_read_files_once_reads_what_a_batch_reads_and_grows_its_buffers(tmp_path: Path):
    paths = files(tmp_path) + [str(tmp_path / "gone")]
    for name in ("a", "b", "c"):  # 600 bytes ahead of the last file: past the first buffer's room
        (tmp_path / name).write_text(name * 300)
        paths.append(str(tmp_path / name))
    before = len(os.listdir("/proc/self/fd"))
    expected = FileBatch(paths, native=False).read()
    assert read_files_once(paths) == expected and expected[4] is None and expected[-1] == b"c" * 300
    assert read_files_once(paths[:2]) == expected[:2]  # the grown buffers serve a smaller call
    assert read_files_once([]) == []
    assert len(os.listdir("/proc/self/fd")) == before


def test_files_of_one_directory_are_packed_by_name_and_read_as_by_their_whole_path(tmp_path: Path):
    paths = []
    for i in range(ANCHOR_SHARE):
        pod = tmp_path / "tier" / ("pod%d" % i)
        pod.mkdir(parents=True)
        for resource in ("cpu", "memory", "io"):
            (pod / ("%s.pressure" % resource)).write_text("some avg10=%d.00 total=%d\n" % (i, len(resource)))
            paths.append(str(pod / ("%s.pressure" % resource)))
    paths.insert(4, str(tmp_path / "tier" / "pod1" / "gone"))  # absent, among its directory's files
    (tmp_path / "lone").write_text("whole\n")
    paths.append(str(tmp_path / "lone"))
    batch = FileBatch(paths)
    assert batch.read() == [None if p.endswith("gone") else read_path_text(p).encode() for p in paths]
    below = batch._blob.split(b"\0")[:len(paths)]
    assert below[:3] == [b"pod0/cpu.pressure", b"memory.pressure", b"io.pressure"]  # the pod's dir once
    assert sum(b"/" not in name for name in below) == 2 * ANCHOR_SHARE + 1
    assert batch.paths == tuple(paths)  # given back whole
    for name in ("cpu", "memory", "io"):  # a pod's dir gone: each of its files fails alone
        os.remove(tmp_path / "tier" / "pod2" / ("%s.pressure" % name))
    (tmp_path / "tier" / "pod2").rmdir()
    got = batch.read()
    assert got[7:10] == [None] * 3 and got[10] == read_path_text(paths[10]).encode()
