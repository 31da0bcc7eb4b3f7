"""ValueBatch: the numbers the collectors take from each file, parsed in C as Python would
parse them; a status < 0 for a file gone, a key missing or text that is not a number; no
fd left open; and the GIL released during the C call."""

from __future__ import annotations

import errno
import os
import threading
import uuid
from pathlib import Path

import pytest

from system.file_io import (
    ANCHOR_SHARE,
    SAME_DIR,
    VALUES_PER_FILE,
    ValueBatch,
    _read_values,
    choose_anchors,
    name_once,
    parse_values,
)

V1_STAT = ("cache 4096\nrss 8192\ninactive_file 12\nactive_file 7\n"
           "total_cache 4096\ntotal_inactive_file 1234567\ntotal_active_file 8\n")
CPU_STAT = "nr_periods 15\nnr_throttled 4\nthrottled_time 987654321\n"
CPU_STAT_V2 = "usage_usec 5000\nuser_usec 3000\nsystem_usec 2000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n"


def specs(tmp_path: Path) -> list[tuple[str, str]]:
    texts = [("usage", "123456789012\n", ""), ("memory", "4096\n", ""), ("stat", V1_STAT, "total_inactive_file"),
             ("stat_inactive", V1_STAT, "inactive_file"), ("cpu_stat", CPU_STAT, "nr_periods nr_throttled"),
             ("cpu_stat_v2", CPU_STAT_V2, "usage_usec"), ("negative", "-3\n", ""), ("empty", "", ""),
             ("words", "max\n", ""), ("nokey", CPU_STAT, "usage_usec"),
             ("long", "pad 1\n" * 4000 + "wanted 77\n", "wanted")]  # longer than the C buffer
    out = []
    for name, text, keys in texts:
        path = tmp_path / name
        path.write_text(text)
        out.append((str(path), keys))
    out.append((str(tmp_path / "gone"), ""))
    return out


EXPECTED = [[123456789012], [4096], [1234567], [12], [15, 4], [5000], [-3], None, None, None, [77], None]


def check(reply: tuple[list[int], list[int]]) -> None:
    values, status = reply
    assert len(status) == len(EXPECTED)
    for i, expected in enumerate(EXPECTED):
        if expected is None:
            assert status[i] < 0, i
        else:
            assert status[i] == 0, i
            assert values[i * VALUES_PER_FILE:i * VALUES_PER_FILE + len(expected)] == expected, i


@pytest.mark.parametrize("native", [True, False])
def test_values_are_parsed_alike_with_or_without_the_c_reader(tmp_path: Path, native: bool):
    if native and _read_values is None:
        pytest.skip("extension not built")
    batch = ValueBatch(specs(tmp_path), native=native)
    before = len(os.listdir("/proc/self/fd"))
    check(batch.read())
    check(batch.read())  # arrays reused
    assert len(os.listdir("/proc/self/fd")) == before


def test_the_c_reader_reports_why_a_file_gave_no_value(tmp_path: Path):
    if _read_values is None:
        pytest.skip("extension not built")
    _, status = ValueBatch(specs(tmp_path)).read()
    assert status[7] == status[8] == -errno.EINVAL  # empty, not a number
    assert status[9] == -errno.ENODATA  # a key missing
    assert status[11] == -errno.ENOENT


def test_an_empty_batch():
    assert ValueBatch([]).read() == ([], [])


def test_parse_values_takes_whole_keys_only():
    assert parse_values(V1_STAT.encode(), "inactive_file") == [12]
    with pytest.raises(ValueError):
        parse_values(b"nr_periods_x 1\n", "nr_periods")


def test_the_gil_is_released_while_the_c_reader_runs(tmp_path: Path):
    """Another Python thread runs while one C call reads many files."""
    if _read_values is None:
        pytest.skip("extension not built")
    path = tmp_path / "usage"
    path.write_text("1\n")
    batch = ValueBatch([(str(path), "")] * 20000)
    batch.read()
    ticks = [0]
    calls = [0]
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            ticks[0] += 1

    def read() -> None:
        calls[0] += 1
        batch.read()

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        # the reader's own Python (unpacking the arrays) may let the spinner run too: compare
        # ticks during the C call with the call's own thread released or not
        import system.file_io as file_io

        original = file_io._read_values
        during: list[int] = []

        def observed(*args: object) -> int:
            start = ticks[0]
            result = original(*args)
            during.append(ticks[0] - start)
            return result

        file_io._read_values = observed
        try:
            while not during or (max(during) == 0 and len(during) < 50):
                read()
        finally:
            file_io._read_values = original
    finally:
        stop.set()
        spinner.join()
    assert max(during) > 0


@pytest.mark.kernel
def test_real_cgroup_files_parse_as_python_parses_them():
    name = "koordlet-test-%s" % uuid.uuid4().hex[:8]
    made = []
    for controller in ("cpu", "cpuacct", "memory"):
        base = Path("/sys/fs/cgroup") / controller
        if (base / "cgroup.procs").exists() and not (base / name).exists():
            (base / name).mkdir()
            made.append(base / name)
    try:
        candidates = [("cpuacct/%s/cpuacct.usage" % name, ""), ("memory/%s/memory.usage_in_bytes" % name, ""),
                      ("memory/%s/memory.stat" % name, "total_inactive_file"),
                      ("cpu/%s/cpu.stat" % name, "nr_periods nr_throttled")]
        found = [("/sys/fs/cgroup/" + path, keys) for path, keys in candidates
                 if os.path.exists("/sys/fs/cgroup/" + path)]
        if not found:
            pytest.skip("no cgroup v1 controllers here")
        values, status = ValueBatch(found).read()
        assert status == [0] * len(found)
        for i, (path, keys) in enumerate(found):
            expected = parse_values(Path(path).read_bytes(), keys)
            got = values[i * VALUES_PER_FILE:i * VALUES_PER_FILE + len(expected)]
            if path.endswith("cpu.stat"):  # counters of an idle cgroup: stable
                assert got == expected
            else:
                assert len(got) == len(expected) and all(v >= 0 for v in got)
    finally:
        for directory in made:
            directory.rmdir()


def test_anchors_are_the_deepest_directories_enough_files_share():
    pods = ["/cg/%s/tier/pod%d/%s" % (ctl, i, name) for i in range(20)
            for ctl, name in (("cpuacct", "cpuacct.usage"), ("memory", "memory.usage_in_bytes"))]
    containers = ["/cg/memory/tier/pod%d/ctr/memory.stat" % i for i in range(20)]
    lone = ["/elsewhere/file", "relative"]
    anchors, anchor_of, rel_at = choose_anchors(pods + containers + lone)
    assert anchors == ["/cg/cpuacct/tier", "/cg/memory/tier"]
    assert anchor_of == [0, 1] * 20 + [1] * 20 + [-1, -1]
    for path, anchor, at in zip(pods + containers, anchor_of, rel_at):
        assert anchors[anchor] + "/" + path[at:] == path


def test_files_opened_relative_to_anchors_read_as_by_their_whole_path(tmp_path: Path):
    if _read_values is None:
        pytest.skip("extension not built")
    specs = []
    for i in range(ANCHOR_SHARE + 4):
        pod = tmp_path / "tier" / ("pod%d" % i)
        pod.mkdir(parents=True)
        (pod / "usage").write_text("%d\n" % (1000 + i))
        specs.append((str(pod / "usage"), ""))
    specs.append((str(tmp_path / "tier" / "pod0" / "gone"), ""))
    assert choose_anchors([path for path, _ in specs])[0] == [str(tmp_path / "tier")]
    batch = ValueBatch(specs)
    values, status = batch.read()
    assert status == [0] * (len(specs) - 1) + [-errno.ENOENT]
    assert values[::VALUES_PER_FILE][:-1] == [1000 + i for i in range(ANCHOR_SHARE + 4)]
    # the anchor is opened for each read: a tier removed and made again is read afresh
    (tmp_path / "tier").rename(tmp_path / "old")
    (tmp_path / "tier" / "pod0").mkdir(parents=True)
    (tmp_path / "tier" / "pod0" / "usage").write_text("7\n")
    values, status = batch.read()
    assert status[0] == 0 and values[0] == 7
    assert status[1] == -errno.ENOENT


def test_a_batch_under_a_vanished_anchor_fails_as_the_anchor_did_and_keeps_its_paths(tmp_path: Path,
                                                                                      monkeypatch: pytest.MonkeyPatch):
    if _read_values is None:
        pytest.skip("extension not built")
    specs = []
    for i in range(ANCHOR_SHARE):
        pod = tmp_path / "tier" / ("pod%d" % i)
        pod.mkdir(parents=True)
        (pod / "memory.stat").write_text("cache 1\ninactive_file %d\n" % i)
        specs.append((str(pod / "memory.stat"), "inactive_file"))
    lone = tmp_path / "lone"
    lone.write_text("5\n")
    specs.append((str(lone), ""))
    batch = ValueBatch(specs)
    assert batch.read()[1] == [0] * len(specs)
    # the blob holds each file below its anchor: the same names below the working
    # directory must not be read once the anchor is gone
    cwd = tmp_path / "cwd"
    for i in range(ANCHOR_SHARE):
        (cwd / ("pod%d" % i)).mkdir(parents=True)
        (cwd / ("pod%d" % i) / "memory.stat").write_text("inactive_file 99\n")
    monkeypatch.chdir(cwd)
    (tmp_path / "tier").rename(tmp_path / "gone")
    values, status = batch.read()
    assert status == [-errno.ENOENT] * ANCHOR_SHARE + [0]
    assert values[-VALUES_PER_FILE] == 5
    assert batch.specs == tuple(specs)


def test_a_file_after_one_of_its_directory_is_named_alone_and_flagged():
    below = [b"pod0/cpuacct.usage", b"pod0/memory.usage_in_bytes", b"pod0/ctr/memory.stat", b"pod0/ctr/cpu.stat",
             b"top", b"pod1/a", b"/whole/pod1/b", b"/whole/pod1/c", b"pod1/d"]
    anchor_of = [0, 1, 1, 0, 0, 0, -1, 0, 0]
    name_once(below, anchor_of)
    assert below == [b"pod0/cpuacct.usage", b"memory.usage_in_bytes", b"pod0/ctr/memory.stat", b"cpu.stat",
                     b"top", b"pod1/a", b"/whole/pod1/b", b"c", b"pod1/d"]
    # flagged: under an anchor (whichever: the pod's dir is the same below each controller's
    # tier) and after a path given in full of the same directory, as the C reader joins them
    assert anchor_of == [0, 1 | SAME_DIR, 1, SAME_DIR, 0, 0, -1, SAME_DIR, 0]


def test_the_usage_files_of_a_pod_under_two_anchors_read_by_name(tmp_path: Path):
    if _read_values is None:
        pytest.skip("extension not built")
    specs = []
    for i in range(ANCHOR_SHARE):
        for controller, name in (("cpuacct", "cpuacct.usage"), ("memory", "memory.usage_in_bytes")):
            pod = tmp_path / controller / "tier" / ("pod%d" % i)
            pod.mkdir(parents=True, exist_ok=True)
            (pod / name).write_text("%d\n" % (i * 10 + len(controller)))
            specs.append((str(pod / name), ""))
    batch = ValueBatch(specs)
    values, status = batch.read()
    assert status == [0] * len(specs)
    assert values[::VALUES_PER_FILE] == [i * 10 + len(c) for i in range(ANCHOR_SHARE) for c in ("cpuacct", "memory")]
    assert batch._blob.count(b"/") == ANCHOR_SHARE  # each pod's dir once, under the first controller's tier
    assert batch.specs == tuple(specs)
