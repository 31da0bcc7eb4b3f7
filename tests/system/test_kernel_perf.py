"""Real-kernel perf counting in cgroup mode, on our own test cgroups.

This machine kind has no hardware PMU: cycles/instructions must fail with ENOENT, and the
same code path is proven with software events (task-clock, context-switches). Where a PMU
exists, the hardware test counts real cycles instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader
from system.cgroup_version import CgroupHierarchy, CgroupMode, detect_hierarchy
from system.errors import Gone
from system.host import Host
from system.perf_access import (
    PerfUnavailable,
    PerfUnavailableReason,
    check_cgroup_events_allowed,
    read_fd_headroom,
    read_perf_event_paranoid,
)
from system.perf_events import (
    CPI_EVENTS,
    CgroupPerfGroups,
    CpiCollector,
    PerfEvent,
    extension_available,
    perf_cgroup_path,
    probe_events,
    sum_samples,
)
from system.topology import read_online_cpus
from tests.system.cgroup_sandbox import SandboxUnavailable, cgroup_sandbox

pytestmark = [
    pytest.mark.kernel,
    pytest.mark.skipif(not extension_available(), reason="system._perf_ext not built"),
]

HOST = Host()
SOFTWARE_PAIR = (PerfEvent.TASK_CLOCK, PerfEvent.CONTEXT_SWITCHES)


@pytest.fixture
def hierarchy() -> CgroupHierarchy:
    try:
        return detect_hierarchy(HOST)
    except Exception as exc:  # noqa: BLE001 - any failure means no usable cgroups
        pytest.skip("no cgroup hierarchy: %s" % exc)


@pytest.fixture
def perf_cgroup(hierarchy) -> Iterator[tuple[str, Path]]:
    """A sandbox cgroup in the hierarchy perf counts on: (relative name, its dir)."""
    try:
        check_cgroup_events_allowed(HOST)
    except PerfUnavailable as exc:
        pytest.skip(str(exc))
    v1 = hierarchy.v1_root("perf_event") is not None
    if not v1 and hierarchy.unified_root is None:
        pytest.skip("no perf_event hierarchy")
    controllers = ("perf_event",) if v1 else ()
    unified = not v1 and hierarchy.mode is not CgroupMode.V2
    try:
        with cgroup_sandbox(controllers=controllers, unified=unified, host=HOST) as name:
            yield name, perf_cgroup_path(hierarchy, name)
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))


def _cpus() -> tuple[int, ...]:
    return tuple(sorted(read_online_cpus(HOST)))


def _busy_in(cgroup: Path, seconds: float) -> None:
    """Run a busy child whose first act is to join ``cgroup``; wait for it."""
    code = textwrap.dedent("""
        import os, sys, time
        with open(sys.argv[1], "w") as f:
            f.write(str(os.getpid()))
        end = time.monotonic() + float(sys.argv[2])
        while time.monotonic() < end:
            pass
        """)
    subprocess.run([sys.executable, "-c", code, str(cgroup / "cgroup.procs"), str(seconds)],
                   check=True, timeout=60)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_paranoid_level_is_readable():
    assert isinstance(read_perf_event_paranoid(HOST), int)


def test_hardware_events_without_a_pmu_are_unsupported_with_enoent(perf_cgroup):
    _, path = perf_cgroup
    before = _open_fds()
    if Path("/sys/bus/event_source/devices/cpu").exists():
        with CpiCollector.open(path, _cpus()) as cpi:
            _busy_in(path, 0.3)
            reading = cpi.read()
        assert reading.cycles > 0 and reading.instructions > 0
        return
    with pytest.raises(PerfUnavailable) as info:
        CpiCollector.open(path, _cpus(), CPI_EVENTS)
    assert info.value.errno == 2  # ENOENT, as perf_event_open(2) documents for no PMU
    assert info.value.reason is PerfUnavailableReason.EVENT_UNSUPPORTED
    assert _open_fds() == before  # nothing left open on failure
    with pytest.raises(PerfUnavailable) as info:
        probe_events(detect_hierarchy(HOST), CPI_EVENTS, cpu=_cpus()[0])
    assert info.value.errno == 2
    probe_events(detect_hierarchy(HOST), SOFTWARE_PAIR, cpu=_cpus()[0])


def test_idle_cgroup_counts_exactly_zero(perf_cgroup):
    _, path = perf_cgroup
    with CgroupPerfGroups.open(path, SOFTWARE_PAIR, _cpus()) as groups:
        for _ in range(3):
            counts = groups.read()
            assert counts.values == (0, 0)
            assert counts.time_enabled_ns == 0


def _unified_usage_ns(hierarchy: CgroupHierarchy, name: str) -> int | None:
    """The cgroup's CPU time from cgroup2 cpu.stat (None when perf counts on v1)."""
    root = hierarchy.unified_root
    if root is None or hierarchy.v1_root("perf_event") is not None:
        return None
    v2 = CgroupFiles(Host(cgroup_root=root), CgroupHierarchy(CgroupMode.V2, root, root))
    return CgroupReader(v2, keep_open=False).cpu_usage_ns(name)


def test_task_clock_follows_the_cgroups_cpu_time_and_stops_when_idle(perf_cgroup, hierarchy):
    name, path = perf_cgroup
    with CgroupPerfGroups.open(path, SOFTWARE_PAIR, _cpus()) as groups:
        _busy_in(path, 0.5)
        first = groups.read()
        again = groups.read()
        samples = groups.read_samples()
    assert len(samples) == len(_cpus())
    assert sum_samples(SOFTWARE_PAIR, samples) == first
    task_clock = first.value(PerfEvent.TASK_CLOCK)
    assert task_clock > 0
    assert again == first  # nothing runs in the cgroup any more: counts stand still
    usage_ns = _unified_usage_ns(hierarchy, name)
    if usage_ns is not None:
        # the child ran only in this cgroup: task-clock and the cgroup's CPU time agree
        assert abs(task_clock - usage_ns) <= 0.2 * usage_ns


def test_cpi_collector_runs_the_same_path_with_software_stand_ins(perf_cgroup):
    _, path = perf_cgroup
    with CpiCollector.open(path, _cpus(), events=SOFTWARE_PAIR) as cpi:
        assert cpi.fd_count == 2 * len(_cpus())
        _busy_in(path, 0.3)
        reading = cpi.read()
    # "cycles" stands for task-clock (ns of CPU: ~3e8) and "instructions" for context
    # switches (a handful): a swap would show at once
    assert reading.cycles > 100 * max(1, reading.instructions)
    assert reading.time_enabled_ns > 0 and reading.time_running_ns > 0


def test_close_releases_every_fd(perf_cgroup):
    _, path = perf_cgroup
    before = _open_fds()
    groups = CgroupPerfGroups.open(path, SOFTWARE_PAIR, _cpus())
    assert _open_fds() == before + groups.fd_count == before + 2 * len(_cpus())
    groups.close()
    assert groups.closed and _open_fds() == before
    groups.close()  # idempotent


def test_counting_a_parent_includes_its_children(perf_cgroup):
    _, path = perf_cgroup
    child = path / "child"
    child.mkdir()
    try:
        with CgroupPerfGroups.open(path, (PerfEvent.TASK_CLOCK,), _cpus()) as parent:
            _busy_in(child, 0.2)
            assert parent.read().values[0] > 0
    finally:
        child.rmdir()


def test_missing_cgroup_is_gone(perf_cgroup):
    _, path = perf_cgroup
    with pytest.raises(Gone):
        CgroupPerfGroups.open(path / "never-made", SOFTWARE_PAIR, _cpus())


def test_fd_limit_is_a_typed_refusal_and_leaks_nothing():
    if not _cpus():
        pytest.skip("no online cpus")
    code = textwrap.dedent("""
        import os, resource
        from system.perf_access import PerfUnavailable
        from system.perf_events import CgroupPerfGroups, PerfEvent, perf_cgroup_path
        from system.cgroup_version import detect_hierarchy
        from system.host import Host
        path = perf_cgroup_path(detect_hierarchy(Host()), "")

        def open_fds(limit):
            held = []
            for fd in range(limit):
                try:
                    os.fstat(fd)
                    held.append(fd)
                except OSError:
                    pass
            return held

        # fill every hole, then allow exactly two more fds: the cgroup dir and one event
        fillers = []
        while True:
            fd = os.open("/dev/null", os.O_RDONLY)
            if fd >= 16:
                break
            fillers.append(fd)
        os.close(fd)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (fd + 2, hard))
        before = open_fds(fd + 2)
        try:
            CgroupPerfGroups.open(path, (PerfEvent.TASK_CLOCK, PerfEvent.CONTEXT_SWITCHES), [0])
        except PerfUnavailable as exc:
            print(exc.reason.value, exc.errno)
        print(open_fds(fd + 2) == before)
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert out.returncode == 0, out.stderr
    # (structlog may print a debug line first: only our two lines count)
    assert out.stdout.splitlines()[-2:] == ["fd_limit 24", "True"]  # EMFILE


def test_fd_headroom_counts_our_own_fds():
    headroom = read_fd_headroom(reserve=0)
    fd = os.open("/", os.O_RDONLY)
    try:
        assert read_fd_headroom(reserve=0) == headroom - 1
    finally:
        os.close(fd)
