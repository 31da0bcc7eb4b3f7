"""The collectors' fast reads agree with the generic reader on v1, v2 and hybrid trees."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader, Throttling
from system.errors import Gone, InvalidValue
from system.psi import Psi, PsiLine, format_psi, parse_psi, psi_averages
from system.usage_reader import UsageReader, parse_throttling
from tests.system.fake_trees import add_cgroup, build_hybrid_tree, build_v1_tree, build_v2_tree, remove_cgroup

POD = "kubepods/pod1"
V1_STAT = "nr_periods 40\nnr_throttled 10\nthrottled_time 5000\n"
V2_STAT = ("usage_usec 2500\nuser_usec 2000\nsystem_usec 500\nnr_periods 40\nnr_throttled 10\n"
           "throttled_usec 5\nnr_bursts 0\nburst_usec 0\n")


@pytest.mark.parametrize("build, overrides", [
    (build_v1_tree, {"cpuacct.usage": "2500000", "memory.usage_in_bytes": "20480", "cpu.stat": V1_STAT}),
    (build_v2_tree, {"cpu.stat": V2_STAT, "memory.current": "20480"}),
    (build_hybrid_tree, {"cpuacct.usage": "2500000", "memory.usage_in_bytes": "20480", "cpu.stat": V1_STAT}),
])
@pytest.mark.parametrize("keep_open", [True, False])
def test_same_figures_as_the_generic_reader(tmp_path, build, overrides, keep_open):
    host = build(tmp_path)
    add_cgroup(host, "kubepods")
    add_cgroup(host, POD, overrides)
    files = CgroupFiles(host)
    fast, generic = UsageReader(files, keep_open=keep_open), CgroupReader(files, keep_open=False)
    # 2.5 ms of CPU; working set = 20480 - inactive_file 4096 (fake memory.stat)
    assert fast.cpu_ns_and_working_set(POD) == (2_500_000, 16384)
    assert fast.cpu_ns_and_working_set(POD) == (generic.cpu_usage_ns(POD), generic.memory_working_set_bytes(POD))
    assert fast.throttling(POD) == generic.throttling(POD) == Throttling(40, 10, 5000)
    fast.close()


def test_a_removed_cgroup_is_gone(tmp_path):
    host = build_v1_tree(tmp_path)
    add_cgroup(host, "kubepods")
    add_cgroup(host, POD)
    reader = UsageReader(CgroupFiles(host), keep_open=False)
    reader.cpu_ns_and_working_set(POD)
    remove_cgroup(host, POD)
    with pytest.raises(Gone):
        reader.cpu_ns_and_working_set(POD)
    reader.forget(POD)
    reader.close()


def test_throttling_needs_its_keys():
    with pytest.raises(InvalidValue):
        parse_throttling("usage_usec 5\n", v2=True)
    assert parse_throttling(V2_STAT, v2=True) == Throttling(40, 10, 5000)


averages = st.floats(min_value=0, max_value=100, allow_nan=False).map(lambda v: round(v, 2))
lines = st.builds(PsiLine, averages, averages, averages, st.integers(0, 2**53))


@settings(max_examples=200, deadline=None)
@given(lines, st.one_of(st.none(), lines))
def test_psi_averages_equal_the_full_parse(some, full):
    text = format_psi(Psi(some, full))
    parsed = parse_psi(text)
    expected_full = None if parsed.full is None else (parsed.full.avg10, parsed.full.avg60, parsed.full.avg300)
    assert psi_averages(text) == ((parsed.some.avg10, parsed.some.avg60, parsed.some.avg300), expected_full)


def test_psi_averages_reject_what_parse_psi_rejects():
    with pytest.raises(InvalidValue):
        psi_averages("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    # an unusual but valid layout goes through the careful parser
    assert psi_averages("some avg60=1.00 avg10=2.00 avg300=3.00 total=4\n") == ((2.0, 1.0, 3.0), None)


def test_inactive_file_is_reused_until_a_refresh_is_asked(tmp_path):
    host = build_v1_tree(tmp_path)
    add_cgroup(host, "kubepods")
    add_cgroup(host, POD, {"memory.usage_in_bytes": "20480"})
    reader = UsageReader(CgroupFiles(host), keep_open=False)
    assert reader.cpu_ns_and_working_set(POD, refresh_inactive=False)[1] == 20480 - 4096  # first read: stat read
    stat = (host.cgroup("memory") / POD / "memory.stat")
    stat.write_text(stat.read_text().replace("total_inactive_file 4096", "total_inactive_file 8192"))
    assert reader.cpu_ns_and_working_set(POD, refresh_inactive=False)[1] == 20480 - 4096
    assert reader.cpu_ns_and_working_set(POD, refresh_inactive=True)[1] == 20480 - 8192


def test_throttle_counts_on_v1_and_v2_layouts():
    from system.usage_reader import parse_throttle_counts
    assert parse_throttle_counts(V1_STAT) == (40, 10)
    assert parse_throttle_counts(V2_STAT) == (40, 10)
    with pytest.raises(InvalidValue):
        parse_throttle_counts("usage_usec 5\n")


@pytest.mark.parametrize("build", [build_v1_tree, build_v2_tree, build_hybrid_tree])
def test_cgroups_resolved_alike_share_their_roots_and_names(tmp_path, build):
    # 3,000 of these at 1,000 pods: the per-file roots, names and versions are one shared tuple
    host = build(tmp_path)
    add_cgroup(host, "kubepods")
    files = CgroupFiles(host)
    reader = UsageReader(files, keep_open=False)
    pods = [reader.paths("kubepods/pod%d" % i) for i in range(2)]
    assert sys.getsizeof(pods[0]) <= sys.getsizeof(object()) + 4 * 8 + 16  # four slots and the GC header
    for pod, rel in zip(pods, ("kubepods/pod0", "kubepods/pod1")):
        assert (pod.cpu, pod.memory, pod.memory_stat, pod.cpu_stat) == tuple(
            str(files.path(resource, rel)) for resource in ("cpuacct.usage", "memory.usage_in_bytes", "memory.stat",
                                                       "cpu.stat"))
    assert (pods[0].cpu_v2, pods[0].cpu_stat_v2, pods[0].inactive_key) == (
        pods[1].cpu_v2, pods[1].cpu_stat_v2, pods[1].inactive_key)
    reader.close()
