import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system.errors import Gone, InvalidValue, NotSupported
from system.host import Host
from system.procfs import (
    CpuTicks,
    cpu_usage_fraction,
    parse_loadavg,
    parse_meminfo,
    parse_proc_cgroup,
    parse_proc_stat_cpu,
    read_cpu_ticks,
    read_loadavg,
    read_meminfo,
    read_node_psi,
    read_proc_cgroups,
)
from tests.system.fake_trees import build_proc_tree

STAT = (
    "cpu  8253 10 2576 121744 189 3 47 15 0 0\n"
    "cpu0 2260 0 1018 63064 18 0 12 5 0 0\n"
    "intr 1 2 3\nctxt 99\nbtime 1700000000\n"
)


def test_parse_proc_stat_reads_the_aggregate_line():
    ticks = parse_proc_stat_cpu(STAT)
    assert ticks == CpuTicks(8253, 10, 2576, 121744, 189, 3, 47, 15)
    assert ticks.busy == 8253 + 10 + 2576 + 3 + 47 + 15
    assert ticks.total == ticks.busy + 121744 + 189


def test_parse_proc_stat_of_an_old_kernel_without_steal():
    assert parse_proc_stat_cpu("cpu 1 2 3 4\n") == CpuTicks(1, 2, 3, 4)


@pytest.mark.parametrize("text", ["", "cpu 1 2\n", "cpu a b c d\n", "cpu0 1 2 3 4\n"])
def test_parse_proc_stat_refuses_garbage(text):
    with pytest.raises(InvalidValue):
        parse_proc_stat_cpu(text)


def test_cpu_usage_fraction_is_busy_delta_over_total_delta():
    before = CpuTicks(100, 0, 100, 800)
    after = CpuTicks(150, 0, 150, 900)
    assert cpu_usage_fraction(before, after) == 0.5
    assert cpu_usage_fraction(after, after) == 0.0


_ticks = st.builds(CpuTicks, *[st.integers(0, 1 << 40)] * 8)


@settings(max_examples=200)
@given(_ticks, _ticks)
def test_cpu_usage_fraction_stays_in_range(a, b):
    assert 0.0 <= cpu_usage_fraction(a, b) <= 1.0


def test_meminfo_used_is_total_minus_available():
    info = parse_meminfo("MemTotal: 1000 kB\nMemFree: 200 kB\nMemAvailable: 600 kB\n"
                         "HugePages_Total: 0\n")
    assert info.used_bytes == 400 * 1024
    assert info.fields["HugePages_Total"] == 0


def test_meminfo_without_memavailable_estimates_it():
    info = parse_meminfo("MemTotal: 1000 kB\nMemFree: 200 kB\nCached: 100 kB\n")
    assert info.available_bytes == 300 * 1024


def test_meminfo_without_total_is_invalid():
    with pytest.raises(InvalidValue):
        parse_meminfo("MemFree: 1 kB\n")


def test_loadavg():
    load = parse_loadavg("0.46 0.21 0.07 1/89 7111\n")
    assert (load.load1, load.running, load.threads, load.last_pid) == (0.46, 1, 89, 7111)
    with pytest.raises(InvalidValue):
        parse_loadavg("0.1 0.2")


def test_proc_cgroup_v1_v2_and_named_lines():
    cg = parse_proc_cgroup(
        "12:cpu,cpuacct:/kubepods/burstable/pod1/abc\n4:memory:/kubepods/burstable/pod1/abc\n"
        "1:name=systemd:/kubepods/burstable/pod1/abc\n0::/kubepods/burstable/pod1/abc\n"
    )
    assert cg.v1["cpu"] == cg.v1["cpuacct"] == "/kubepods/burstable/pod1/abc"
    assert "name=systemd" in cg.v1
    assert cg.unified == "/kubepods/burstable/pod1/abc"
    assert cg.path_of("blkio") == cg.unified


def test_proc_cgroup_pure_v2():
    cg = parse_proc_cgroup("0::/system.slice/x.service\n")
    assert cg.v1 == {} and cg.path_of("cpu") == "/system.slice/x.service"
    with pytest.raises(InvalidValue):
        parse_proc_cgroup("garbage\n")


def test_readers_on_a_fake_proc(tmp_path):
    host = build_proc_tree(tmp_path, stat=STAT, pids={42: "0::/a\n"})
    assert read_cpu_ticks(host).user == 8253
    assert read_meminfo(host).total_bytes > 0
    assert read_loadavg(host).threads > 0
    psi = read_node_psi(host, "memory")
    assert (psi.some.total_us, psi.some.avg300, psi.full.total_us) == (0, 0.0, 0)  # fake: all zero
    assert read_proc_cgroups(host, 42).unified == "/a"
    with pytest.raises(Gone):
        read_proc_cgroups(host, 43)


def test_missing_pressure_dir_is_not_supported(tmp_path):
    host = build_proc_tree(tmp_path, psi=False)
    with pytest.raises(NotSupported):
        read_node_psi(host, "cpu")
    with pytest.raises(InvalidValue):
        read_node_psi(host, "gpu")


def test_readers_on_this_machine():
    host = Host()
    ticks = read_cpu_ticks(host)
    assert ticks.total > 0
    info = read_meminfo(host)
    assert 0 < info.used_bytes < info.total_bytes
    import os

    assert read_proc_cgroups(host, os.getpid()).v1 or read_proc_cgroups(host, os.getpid()).unified


_path = st.lists(st.text("abcdef0123456789-_.", min_size=1, max_size=12), max_size=5).map(
    lambda parts: "/" + "/".join(parts))


@settings(max_examples=100)
@given(st.dictionaries(st.sampled_from(["cpu", "cpuacct", "memory", "blkio", "pids", "name=systemd"]),
                       _path, max_size=6), st.one_of(st.none(), _path))
def test_proc_cgroup_round_trip(v1, unified):
    lines = ["%d:%s:%s" % (i + 1, c, p) for i, (c, p) in enumerate(v1.items())]
    if unified is not None:
        lines.append("0::" + unified)
    parsed = parse_proc_cgroup("\n".join(lines) + "\n")
    assert dict(parsed.v1) == v1 and parsed.unified == unified


@settings(max_examples=100)
@given(st.integers(1, 1 << 40), st.integers(0, 1 << 40), st.integers(0, 1 << 40))
def test_meminfo_values_scale_kb_to_bytes(total, free, avail):
    info = parse_meminfo("MemTotal: %d kB\nMemFree: %d kB\nMemAvailable: %d kB\n"
                         % (total, free, avail))
    assert (info.total_bytes, info.free_bytes, info.available_bytes) == (
        total * 1024, free * 1024, avail * 1024)
    assert info.used_bytes == max(0, (total - avail) * 1024)


@settings(max_examples=100)
@given(_ticks)
def test_proc_stat_round_trip(ticks):
    line = "cpu  %d %d %d %d %d %d %d %d 0 0\n" % (
        ticks.user, ticks.nice, ticks.system, ticks.idle, ticks.iowait, ticks.irq,
        ticks.softirq, ticks.steal)
    assert parse_proc_stat_cpu(line) == ticks
