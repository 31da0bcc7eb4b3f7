"""Each collector on a fake hybrid tree: values move as the files say."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.agent import collectors_for
from koordlet.metricsadvisor.collectors.be_resource import (
    BE_CPU,
    BE_LIMIT,
    BE_REQUEST,
    BEResourceCollector,
    be_request_cores,
    real_limit_cores,
)
from koordlet.metricsadvisor.collectors.node_resource import NodeResourceCollector
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.collectors.pod_throttled import PodThrottledCollector
from koordlet.metricsadvisor.collectors.psi import PSICollector
from koordlet.metricsadvisor.framework import CollectorUnsupported, Turns
from tests.koordlet.hubs_helper import config_of
from tests.koordlet.metricsadvisor.fixtures import context, fake_node, make_pod
from tests.system.fake_trees import remove_cgroup, set_cgroup_file, write_file

GIB = 1024 ** 3


def by_key(pairs):
    return dict(pairs)


def test_node_usage_from_proc_stat_and_meminfo(tmp_path: Path):
    host, states = fake_node(tmp_path, [])
    collector = NodeResourceCollector(1.0, ticks_per_second=100)
    collector.setup(context(host, states))
    first = by_key(collector.collect(1000.0))
    # meminfo default: MemTotal 24683568 kB - MemAvailable 22000000 kB
    assert first == {SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES): (24683568 - 22000000) * 1024.0}
    write_file(host.proc("stat"), "cpu  1100 0 550 8100 10 0 5 0 0 0\n")  # +150 busy ticks
    second = by_key(collector.collect(1002.0))
    assert second[SeriesKey.of(Metric.NODE_CPU_USAGE_CORES)] == pytest.approx(0.75)  # 1.5 s in 2 s


def test_pod_and_container_cpu_and_working_set(tmp_path: Path):
    pod = make_pod("u1")
    host, states = fake_node(tmp_path, [pod])
    ctx = context(host, states)
    collector = PodResourceCollector(1.0)
    collector.setup(ctx)
    container = pod.containers[0]
    set_cgroup_file(host, pod.cgroup_parent, "cpuacct.usage", "1000000000")
    set_cgroup_file(host, container.cgroup_dir, "cpuacct.usage", "400000000")
    set_cgroup_file(host, pod.cgroup_parent, "memory.usage_in_bytes", str(3 * GIB))
    first = by_key(collector.collect(100.0))
    # working set = usage - total_inactive_file (4096 in the fake memory.stat)
    assert first[SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, "u1")] == 3 * GIB - 4096
    assert SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "u1") not in first  # needs two readings
    set_cgroup_file(host, pod.cgroup_parent, "cpuacct.usage", "2500000000")
    set_cgroup_file(host, container.cgroup_dir, "cpuacct.usage", "900000000")
    second = by_key(collector.collect(102.0))
    assert second[SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "u1")] == pytest.approx(0.75)
    assert second[SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "u1", container.id)] == pytest.approx(0.25)


def test_system_usage_is_node_minus_pods_of_the_same_tick(tmp_path: Path):
    pod = make_pod("u1")
    host, states = fake_node(tmp_path, [pod])
    ctx = context(host, states)
    node, pods = NodeResourceCollector(1.0, ticks_per_second=100), PodResourceCollector(1.0)
    node.setup(ctx)
    pods.setup(ctx)
    for now in (100.0, 101.0):
        set_cgroup_file(host, pod.cgroup_parent, "cpuacct.usage", str(int((now - 100) * 0.25e9)))
        write_file(host.proc("stat"), "cpu  %d 0 500 8000 10 0 5 0 0 0\n" % (1000 + (now - 100) * 100))
        ctx.cache.append_at(now, node.collect(now))
        values = by_key(pods.collect(now))
    assert values[SeriesKey.of(Metric.SYS_CPU_USAGE_CORES)] == pytest.approx(1.0 - 0.25)
    node_memory = ctx.cache.latest(SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES)).value
    assert values[SeriesKey.of(Metric.SYS_MEMORY_USAGE_BYTES)] == node_memory - (12288 - 4096)


def test_a_vanished_cgroup_is_skipped_and_forgotten(tmp_path: Path):
    keep, gone = make_pod("keep"), make_pod("gone")
    host, states = fake_node(tmp_path, [keep, gone])
    collector = PodResourceCollector(1.0)
    collector.setup(context(host, states))
    collector.collect(1.0)
    remove_cgroup(host, gone.cgroup_parent)
    samples = collector.collect(2.0)
    assert {key.pod_uid for key, _ in samples} == {"keep"} and collector.unreadable == 2
    states.remove("gone")
    collector.collect(3.0)
    listed = collector._listing.listed
    assert {obj[0] for obj in listed.objects} == {"keep"} and len(listed.entries) == len(listed.objects)


def test_throttled_ratio_of_pod_and_container(tmp_path: Path):
    pod = make_pod("u1")
    host, states = fake_node(tmp_path, [pod])
    collector = PodThrottledCollector(1.0)
    collector.setup(context(host, states))
    container = pod.containers[0]
    set_cgroup_file(host, container.cgroup_dir, "cpu.stat", "nr_periods 10\nnr_throttled 1\nthrottled_time 5\n")
    assert collector.collect(1.0) == []
    set_cgroup_file(host, container.cgroup_dir, "cpu.stat", "nr_periods 30\nnr_throttled 11\nthrottled_time 9\n")
    values = by_key(collector.collect(2.0))
    assert values[SeriesKey.of(Metric.CONTAINER_CPU_THROTTLED_RATIO, "u1", container.id)] == 0.5
    assert values[SeriesKey.of(Metric.POD_CPU_THROTTLED_RATIO, "u1")] == 0.0


def test_turns_read_pods_every_round_and_each_container_once_in_every_rounds():
    objects = [("p%d" % p, "", "pod%d" % p) for p in range(20)]
    objects += [("p%d" % p, "c%d-%d" % (p, c), "pod%d/c%d" % (p, c)) for p in range(20) for c in range(3)]
    turns = Turns(10)
    rounds = [set(turns.due(objects, cycle)) for cycle in range(10)]
    pods = set(range(20))
    assert all(pods <= due for due in rounds)
    counts = Counter(i for due in rounds for i in due - pods)
    assert set(counts) == set(range(20, 80)) and set(counts.values()) == {1}
    assert max(len(due) for due in rounds) < 20 + 60  # spread, not all at once
    shuffled = objects[::-1]  # a container keeps its turn when the listing changes order
    assert {shuffled[i][1] for i in turns.due(shuffled, 3)} == {objects[i][1] for i in turns.due(objects, 3)}
    assert Turns.of(1.0, None).due(objects, 7) == list(range(80))


def test_container_usage_read_every_container_interval_pods_every_round(tmp_path: Path):
    pod = make_pod("u1", containers=2)
    host, states = fake_node(tmp_path, [pod])
    usage = PodResourceCollector(1.0, container_interval=5.0)
    usage.setup(context(host, states))
    seen: dict[SeriesKey, list[float]] = {}
    for t in range(11):
        for c in pod.containers:
            set_cgroup_file(host, c.cgroup_dir, "cpuacct.usage", str(t * 500_000_000))
        for key, value in usage.collect(100.0 + t):
            seen.setdefault(key, []).append(value)
    assert len(seen[SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, "u1")]) == 11
    for c in pod.containers:
        memory = seen[SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, "u1", c.id)]
        assert len(memory) in (2, 3)  # rounds 0-10 hold two or three of its turns
        # rates over the 5 s between two reads
        assert seen[SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "u1", c.id)] == [pytest.approx(0.5)] * (
            len(memory) - 1)


def test_throttling_is_collected_at_the_container_interval():
    by_name = {c.name: c.interval for c in collectors_for(config_of(collect_container_res_used_interval_seconds="20"))}
    assert by_name["podthrottled"] == 20.0 and by_name["podresource"] == 1.0


def test_be_usage_limit_and_batch_requests(tmp_path: Path):
    be = make_pod("b1", KoordQoSClass.BE, tier="besteffort", containers=2, batch_cpu_milli=1500)
    ls = make_pod("l1", batch_cpu_milli=700)  # not BE: its batch-cpu does not count
    host, states = fake_node(tmp_path, [be, ls])
    assert be_request_cores(states.pods()) == 3.0
    set_cgroup_file(host, "kubepods/besteffort", "cpu.cfs_quota_us", "150000")
    collector = BEResourceCollector(1.0)
    collector.setup(context(host, states))
    set_cgroup_file(host, "kubepods/besteffort", "cpuacct.usage", "0")
    collector.collect(10.0)
    set_cgroup_file(host, "kubepods/besteffort", "cpuacct.usage", "3000000000")
    values = by_key(collector.collect(12.0))
    assert values[SeriesKey.of(Metric.BE_CPU_USAGE_CORES)] == 1.5
    assert values[SeriesKey.of(Metric.BE_CPU_LIMIT_CORES)] == 1.5  # quota 1.5 CPUs < cpuset 0-1
    assert values[SeriesKey.of(Metric.BE_CPU_REQUEST_CORES)] == 3.0


def test_batch_requests_follow_the_informer_pods_added_and_removed(tmp_path: Path):
    host, states = fake_node(tmp_path, [make_pod("b1", KoordQoSClass.BE, tier="besteffort", batch_cpu_milli=1500)])
    collector = BEResourceCollector(1.0)
    collector.setup(context(host, states))
    request = lambda now: by_key(collector.collect(now))[SeriesKey.of(Metric.BE_CPU_REQUEST_CORES)]
    assert request(10.0) == request(11.0) == 1.5
    states.put(make_pod("b2", KoordQoSClass.BE, tier="besteffort", batch_cpu_milli=500))
    assert request(12.0) == 2.0
    states.remove("b1")
    assert request(13.0) == 0.5
    states.put(make_pod("b2", KoordQoSClass.BE, tier="besteffort", containers=3, batch_cpu_milli=500))  # updated
    assert request(14.0) == 1.5 == be_request_cores(states.pods())
    states.put(make_pod("b2", KoordQoSClass.LS, batch_cpu_milli=500))  # no longer BE
    assert request(15.0) == 0.0


def test_real_limit_is_the_tighter_of_cpuset_and_quota():
    assert real_limit_cores(4, None) == 4.0
    assert real_limit_cores(4, 2.5) == 2.5
    assert real_limit_cores(2, 8.0) == 2.0
    assert real_limit_cores(0, 3.0) == 3.0


PSI_TEXT = ("some avg10=1.50 avg60=0.75 avg300=0.25 total=100\n"
            "full avg10=0.50 avg60=0.10 avg300=0.05 total=20\n")


def test_psi_of_node_pods_and_containers_from_the_unified_hierarchy(tmp_path: Path):
    pod = make_pod("u1")
    host, states = fake_node(tmp_path, [pod])
    (host.cgroup("unified") / pod.cgroup_parent / "memory.pressure").write_text(PSI_TEXT)
    write_file(host.proc("pressure", "cpu"), "some avg10=9.00 avg60=8.00 avg300=7.00 total=5\n")
    collector = PSICollector(10.0)
    collector.setup(context(host, states))
    values = by_key(collector.collect(50.0))
    labels = lambda resource, kind, window: (("kind", kind), ("resource", resource), ("window", window))
    assert values[SeriesKey("node_psi", "", "", labels("cpu", "some", "avg10"))] == 9.0
    assert SeriesKey("node_psi", "", "", labels("cpu", "full", "avg10")) not in values  # kernel printed none
    # only the node's avg10 figures are series; pods and containers are in the snapshot alone
    assert {key.metric for key in values} == {"node_psi"}
    assert collector.snapshot[("u1", "")]["memory"] == ((1.5, 0.75, 0.25), (0.5, 0.1, 0.05))
    assert (pod.uid, pod.containers[0].id) in collector.snapshot
    assert collector.snapshot[("", "")]["cpu"] == ((9.0, 8.0, 7.0), None)


def test_a_kernel_without_psi_disables_the_collector(tmp_path: Path):
    host, states = fake_node(tmp_path, [])
    for kind in ("cpu", "memory", "io"):
        host.proc("pressure", kind).unlink()
        (host.cgroup("unified") / ("%s.pressure" % kind)).unlink()
    with pytest.raises(CollectorUnsupported, match="no PSI"):
        PSICollector(10.0).setup(context(host, states))


def test_pod_collectors_need_a_states_informer(tmp_path: Path):
    host, _ = fake_node(tmp_path, [])
    for collector in (PodResourceCollector(1.0), PodThrottledCollector(1.0)):
        with pytest.raises(CollectorUnsupported, match="states informer"):
            collector.setup(context(host, None))


NET_DEV = ("Inter-|   Receive                                                |  Transmit\n"
           " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
           "    lo: {lo} 10 0 0 0 0 0 0 {lo} 10 0 0 0 0 0 0\n"
           "  eth0: {rx} 100 2 0 0 0 0 0 {tx} 50 0 0 0 0 0 0\n"
           "vethab12: 999 9 0 0 0 0 0 0 999 9 0 0 0 0 0 0\n")


def test_network_rates_of_device_backed_interfaces_only(tmp_path: Path):
    from koordlet.metricsadvisor.collectors.network import NetworkCollector

    host, states = fake_node(tmp_path, [])
    (host.sys("class", "net", "eth0", "device")).mkdir(parents=True)
    (host.sys("class", "net", "vethab12")).mkdir(parents=True)
    write_file(host.proc("net", "dev"), NET_DEV.format(lo=5, rx=1000, tx=500))
    collector = NetworkCollector(1.0)
    collector.setup(context(host, states))
    assert collector.collect(10.0) == []
    write_file(host.proc("net", "dev"), NET_DEV.format(lo=9, rx=5000, tx=700))
    values = {(k.metric, dict(k.labels)["interface"], dict(k.labels)["direction"]): v
              for k, v in collector.collect(12.0)}
    assert values[("node_network_bytes_per_second", "eth0", "rx")] == 2000.0  # 4000 bytes in 2 s
    assert values[("node_network_bytes_per_second", "eth0", "tx")] == 100.0
    assert values[("node_network_errors_per_second", "eth0", "rx")] == 0.0
    assert {interface for _, interface, _ in values} == {"eth0"}  # no lo, no pod veth


def test_be_round_reads_the_tier_in_its_batch_not_on_the_loop(tmp_path: Path):
    """The figures come from the texts the batch read (in the reading thread), not from a
    read of its own; a tier that cannot be read gives no usage and restarts the CPU delta."""
    host, states = fake_node(tmp_path, [make_pod("b1", KoordQoSClass.BE, tier="besteffort", batch_cpu_milli=500)])
    set_cgroup_file(host, "kubepods/besteffort", "cpu.cfs_quota_us", "-1")
    collector = BEResourceCollector(1.0)
    collector.setup(context(host, states))

    def run(now: float, after_read=lambda: None) -> dict[SeriesKey, float]:
        rounds = collector.round(now)
        batches = next(rounds)
        assert len(batches) == 1 and any(path.endswith("cpuacct.usage") for path in batches[0].paths)
        texts = batches[0].read()
        after_read()
        try:
            rounds.send([texts])
        except StopIteration as done:
            return dict(done.value)
        raise AssertionError("the round asked for a second batch")

    set_cgroup_file(host, "kubepods/besteffort", "cpuacct.usage", "1000000000")
    run(10.0)
    set_cgroup_file(host, "kubepods/besteffort", "cpuacct.usage", "2000000000")
    values = run(12.0, lambda: set_cgroup_file(host, "kubepods/besteffort", "cpuacct.usage", "9000000000"))
    assert values[BE_CPU] == 0.5  # (2 s - 1 s) of CPU over 2 s: the batch's text, not the later one
    assert values[BE_LIMIT] == 2.0  # no quota: the cpuset's 0-1
    usage = host.cgroup("cpuacct") / "kubepods/besteffort" / "cpuacct.usage"
    usage.unlink()
    assert set(run(13.0)) == {BE_REQUEST}
    usage.write_text("9500000000")
    assert BE_CPU not in run(14.0)  # the delta starts again after the gap
    assert run(15.0)[BE_CPU] == 0.0
