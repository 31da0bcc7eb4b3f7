"""perf_events / perf_access: the pure decisions, the fake-tree shells and the fallback path.

Real-kernel counting lives in test_kernel_perf.py.
"""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from system.cgroup_version import CgroupHierarchy, CgroupMode
from system.errors import InvalidValue, NotSupported
from system.host import Host
from system.perf_access import (
    CAP_PERFMON,
    CAP_SYS_ADMIN,
    PerfUnavailable,
    PerfUnavailableReason,
    cgroup_events_allowed,
    check_cgroup_events_allowed,
    fd_cost,
    fd_headroom,
    has_perf_capability,
    parse_cap_eff,
    read_perf_event_paranoid,
    reason_for_errno,
)
from system.perf_events import (
    CPI_EVENTS,
    CgroupPerfGroups,
    GroupSample,
    PerfEvent,
    cpi_reading,
    extension_available,
    group_read_size,
    parse_group_read,
    perf_cgroup_path,
    scale_count,
    sum_samples,
)
from tests.system.fake_trees import write_file

ROOT_CAPS = "000001ffffffffff"  # CapEff of a root shell on Linux >= 5.9


def _group_buf(enabled: int, running: int, *values: int) -> bytes:
    # the layout of perf_event_open(2), "Reading results", PERF_FORMAT_GROUP without IDs
    return struct.pack("=3Q%dQ" % len(values), len(values), enabled, running, *values)


# ------------------------------------------------------------------ event table

def test_event_codes_are_the_uapi_generalised_events():
    # include/uapi/linux/perf_event.h: PERF_TYPE_HARDWARE = 0, PERF_TYPE_SOFTWARE = 1,
    # PERF_COUNT_HW_CPU_CYCLES = 0, _INSTRUCTIONS = 1, _REF_CPU_CYCLES = 9,
    # PERF_COUNT_SW_CPU_CLOCK = 0, _TASK_CLOCK = 1, _CONTEXT_SWITCHES = 3
    assert (PerfEvent.CYCLES.type, PerfEvent.CYCLES.config) == (0, 0)
    assert (PerfEvent.INSTRUCTIONS.type, PerfEvent.INSTRUCTIONS.config) == (0, 1)
    assert (PerfEvent.REF_CYCLES.type, PerfEvent.REF_CYCLES.config) == (0, 9)
    assert (PerfEvent.CPU_CLOCK.type, PerfEvent.CPU_CLOCK.config) == (1, 0)
    assert (PerfEvent.TASK_CLOCK.type, PerfEvent.TASK_CLOCK.config) == (1, 1)
    assert (PerfEvent.CONTEXT_SWITCHES.type, PerfEvent.CONTEXT_SWITCHES.config) == (1, 3)
    assert CPI_EVENTS == (PerfEvent.CYCLES, PerfEvent.INSTRUCTIONS)


# ------------------------------------------------------------------ reading and scaling

def test_group_read_is_decoded_in_event_order():
    sample = parse_group_read(_group_buf(500, 400, 7, 11), 2)
    assert sample == GroupSample(time_enabled_ns=500, time_running_ns=400, values=(7, 11))
    assert group_read_size(2) == 40


@pytest.mark.parametrize("buf,n", [
    (_group_buf(1, 1, 5), 2),  # short read
    (_group_buf(1, 1, 5, 6) + b"\0" * 8, 2),  # too long
    (struct.pack("=5Q", 3, 1, 1, 5, 6), 2),  # kernel says 3 events, we opened 2
])
def test_malformed_group_read_is_invalid(buf, n):
    with pytest.raises(InvalidValue):
        parse_group_read(buf, n)


def test_multiplexed_count_is_scaled_by_enabled_over_running():
    # perf-stat's estimate: a counter on the PMU half the time counted half the events
    assert scale_count(1000, time_enabled=2_000_000, time_running=1_000_000) == 2000
    assert scale_count(999, time_enabled=3, time_running=1) == 2997
    assert scale_count(1000, time_enabled=5, time_running=5) == 1000


def test_count_without_timing_information_is_kept_raw():
    assert scale_count(42, time_enabled=0, time_running=0) == 42
    assert scale_count(42, time_enabled=10, time_running=0) == 42


@given(st.integers(0, 2**48), st.integers(1, 2**40), st.integers(1, 2**40))
def test_scaling_never_lowers_a_count_and_matches_the_ratio(value, enabled, running):
    scaled = scale_count(value, enabled, running)
    assert scaled >= value
    if running < enabled:
        assert abs(scaled - value * enabled / running) <= 1 + value * enabled / running * 1e-12


def test_cpus_are_scaled_one_by_one_then_summed():
    events = (PerfEvent.CYCLES, PerfEvent.INSTRUCTIONS)
    samples = [
        GroupSample(100, 50, (1000, 400)),  # multiplexed half of the time on cpu0
        GroupSample(100, 100, (300, 100)),  # always on the PMU on cpu1
    ]
    counts = sum_samples(events, samples)
    assert counts.values == (2000 + 300, 800 + 100)
    assert (counts.time_enabled_ns, counts.time_running_ns) == (200, 150)


def test_cpi_fields_follow_the_event_names_not_positions():
    # koordlet v1.1 returned (instructions, cycles) under the name "cycles, instructions"
    counts = sum_samples(CPI_EVENTS, [GroupSample(10, 10, (3000, 1000))])
    reading = cpi_reading(counts, PerfEvent.CYCLES, PerfEvent.INSTRUCTIONS)
    assert (reading.cycles, reading.instructions) == (3000, 1000)
    assert reading.cpi == 3.0
    swapped = sum_samples((PerfEvent.INSTRUCTIONS, PerfEvent.CYCLES),
                          [GroupSample(10, 10, (1000, 3000))])
    assert cpi_reading(swapped, PerfEvent.CYCLES, PerfEvent.INSTRUCTIONS) == reading


def test_cpi_of_nothing_retired_is_none():
    counts = sum_samples(CPI_EVENTS, [GroupSample(0, 0, (0, 0))])
    assert cpi_reading(counts, *CPI_EVENTS).cpi is None


def test_an_event_not_counted_is_invalid():
    counts = sum_samples((PerfEvent.TASK_CLOCK,), [GroupSample(1, 1, (5,))])
    with pytest.raises(InvalidValue):
        counts.value(PerfEvent.CYCLES)


# ------------------------------------------------------------------ where the cgroup is

def _hierarchy(mode: CgroupMode, v1: tuple = (), unified: Path | None = None) -> CgroupHierarchy:
    return CgroupHierarchy(mode, Path("/cg"), unified, v1, frozenset())


def test_perf_cgroup_is_the_v1_perf_event_dir_when_mounted():
    h = _hierarchy(CgroupMode.HYBRID, (("perf_event", Path("/cg/perf_event")),), Path("/cg/unified"))
    assert perf_cgroup_path(h, "/kubepods/pod1/c1") == Path("/cg/perf_event/kubepods/pod1/c1")
    assert perf_cgroup_path(h, "") == Path("/cg/perf_event")


def test_perf_cgroup_falls_back_to_cgroup2():
    hybrid = _hierarchy(CgroupMode.HYBRID, (("cpu", Path("/cg/cpu")),), Path("/cg/unified"))
    assert perf_cgroup_path(hybrid, "kubepods/x") == Path("/cg/unified/kubepods/x")
    v2 = _hierarchy(CgroupMode.V2, (), Path("/cg"))
    assert perf_cgroup_path(v2, "kubepods.slice") == Path("/cg/kubepods.slice")


def test_perf_cgroup_needs_a_hierarchy_and_a_clean_dir():
    with pytest.raises(NotSupported):
        perf_cgroup_path(_hierarchy(CgroupMode.V1, (("cpu", Path("/cg/cpu")),)), "a")
    with pytest.raises(InvalidValue):
        perf_cgroup_path(_hierarchy(CgroupMode.V2, (), Path("/cg")), "a/../../etc")


# ------------------------------------------------------------------ access and budget

@pytest.mark.parametrize("code,reason", [
    (errno.ENOENT, PerfUnavailableReason.EVENT_UNSUPPORTED),
    (errno.EOPNOTSUPP, PerfUnavailableReason.EVENT_UNSUPPORTED),
    (errno.EACCES, PerfUnavailableReason.NOT_PERMITTED),
    (errno.EPERM, PerfUnavailableReason.NOT_PERMITTED),
    (errno.EMFILE, PerfUnavailableReason.FD_LIMIT),
    (errno.ENOSYS, PerfUnavailableReason.KERNEL_WITHOUT_PERF),
    (errno.ENODEV, PerfUnavailableReason.CPU_OFFLINE),
    (errno.EINVAL, PerfUnavailableReason.INVALID),
    (errno.EIO, PerfUnavailableReason.OTHER),
])
def test_errno_reasons(code, reason):
    assert reason_for_errno(code) is reason


@pytest.mark.parametrize("paranoid,privileged,allowed", [
    (-1, False, True), (0, False, True), (1, False, False), (2, False, False),
    (4, False, False), (2, True, True), (4, True, True),
])
def test_paranoid_levels_for_cgroup_events(paranoid, privileged, allowed):
    assert cgroup_events_allowed(paranoid, privileged) is allowed


def test_capabilities_from_status():
    status = "Name:\tkoordlet\nCapInh:\t0000000000000000\nCapEff:\t%s\n" % ROOT_CAPS
    assert has_perf_capability(parse_cap_eff(status))
    assert has_perf_capability(1 << CAP_PERFMON)
    assert has_perf_capability(1 << CAP_SYS_ADMIN)
    assert not has_perf_capability(parse_cap_eff("CapEff:\t0000000000000000\n"))
    with pytest.raises(InvalidValue):
        parse_cap_eff("Name:\tx\n")


def test_fd_cost_and_headroom():
    assert fd_cost(2, 64) == 128
    assert fd_headroom(soft_limit=1024, open_fds=100, reserve=256) == 668
    assert fd_headroom(soft_limit=200, open_fds=100, reserve=256) == 0


def test_paranoid_on_a_fake_proc(tmp_path):
    host = Host.under(tmp_path)
    with pytest.raises(PerfUnavailable) as info:
        read_perf_event_paranoid(host)
    assert info.value.reason is PerfUnavailableReason.KERNEL_WITHOUT_PERF
    write_file(host.proc("sys", "kernel", "perf_event_paranoid"), "2\n")
    assert read_perf_event_paranoid(host) == 2
    write_file(host.proc("self", "status"), "CapEff:\t0000000000000000\n")
    with pytest.raises(PerfUnavailable) as info:
        check_cgroup_events_allowed(host)
    assert info.value.errno == errno.EACCES
    write_file(host.proc("self", "status"), "CapEff:\t%s\n" % ROOT_CAPS)
    check_cgroup_events_allowed(host)
    write_file(host.proc("sys", "kernel", "perf_event_paranoid"), "many\n")
    with pytest.raises(InvalidValue):
        read_perf_event_paranoid(host)


# ------------------------------------------------------------------ opening, before the kernel

needs_extension = pytest.mark.skipif(not extension_available(), reason="system._perf_ext not built")


@needs_extension
def test_budget_too_small_opens_nothing(tmp_path):
    with pytest.raises(PerfUnavailable) as info:
        CgroupPerfGroups.open(tmp_path, (PerfEvent.TASK_CLOCK,), cpus=[0, 1], fd_budget=1)
    assert (info.value.errno, info.value.reason) == (errno.EMFILE, PerfUnavailableReason.FD_LIMIT)


@needs_extension
def test_no_events_or_no_cpus_is_invalid(tmp_path):
    with pytest.raises(InvalidValue):
        CgroupPerfGroups.open(tmp_path, (), cpus=[0])
    with pytest.raises(InvalidValue):
        CgroupPerfGroups.open(tmp_path, (PerfEvent.TASK_CLOCK,), cpus=[])


def test_missing_extension_is_a_clear_error_not_a_crash():
    code = textwrap.dedent("""
        import sys
        sys.modules["system._perf_ext"] = None  # as if the C extension was never built
        from system.perf_access import PerfUnavailable, PerfUnavailableReason
        from system.perf_events import CpiCollector, extension_available
        assert not extension_available()
        try:
            CpiCollector.open("/nonexistent", cpus=[0])
        except PerfUnavailable as exc:
            assert exc.reason is PerfUnavailableReason.EXTENSION_MISSING, exc
            print("ok", exc)
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok") and "not built" in out.stdout


def test_read_path_scales_and_sums_like_the_pure_function(tmp_path):
    # pipes stand in for the leaders' fds: each holds one read-out in the kernel's layout,
    # so the hot read path is checked against sum_samples (the kernel is in test_kernel_perf)
    events = (PerfEvent.CYCLES, PerfEvent.INSTRUCTIONS)
    samples = [GroupSample(100, 50, (1000, 400)), GroupSample(0, 0, (7, 3)),
               GroupSample(90, 90, (300, 100))]
    fds = []
    try:
        for sample in samples:
            r, w = os.pipe()
            fds += [r, w]
            os.write(w, _group_buf(sample.time_enabled_ns, sample.time_running_ns, *sample.values))
        groups = CgroupPerfGroups(tmp_path, events, (0, 1, 2), [(fds[0],), (fds[2],), (fds[4],)])
        assert groups.read() == sum_samples(events, samples)
    finally:
        for fd in fds:
            os.close(fd)


@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=8),
       st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_group_read_round_trip(values, enabled, running):
    sample = parse_group_read(_group_buf(enabled, running, *values), len(values))
    assert sample == GroupSample(enabled, running, tuple(values))


def test_fd_limit_is_raised_towards_the_hard_limit_never_lowered():
    code = textwrap.dedent("""
        import resource
        from system.perf_access import raise_fd_limit
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
        assert raise_fd_limit(wanted=32) == 64  # never lowered
        assert raise_fd_limit(wanted=128) == 128 == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        top = raise_fd_limit()
        assert top == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        assert top == hard or hard == resource.RLIM_INFINITY
        print("ok")
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "ok"


def test_fd_headroom_leaves_the_kept_fd_pool_its_unopened_budget():
    # soft 1024, 300 open (of them 100 kept by the pool, budget 512): 412 more may come to the pool
    assert fd_headroom(soft_limit=1024, open_fds=300, reserve=256, promised=512 - 100) == 56
    assert fd_headroom(soft_limit=1024, open_fds=300, reserve=256, promised=600) == 0
    assert fd_headroom(soft_limit=1024, open_fds=300, reserve=256, promised=-5) == 468
