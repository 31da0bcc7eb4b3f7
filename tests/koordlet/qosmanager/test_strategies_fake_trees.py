"""Strategies end to end on fake cgroup / resctrl trees: the right files get the right values."""

from __future__ import annotations

import asyncio
import threading

import pytest

from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric
from koordlet.qosmanager.cpu_burst import CPUBurst
from koordlet.qosmanager.cpu_suppress import CPUSuppress
from koordlet.qosmanager.eviction import EvictionReason
from koordlet.qosmanager.memory_evict import MemoryEvict
from koordlet.qosmanager.memory_qos import MemoryQoS
from koordlet.qosmanager.pod_changes import RESYNC_SECONDS
from koordlet.qosmanager.resctrl import ResctrlQoS
from koordlet.slo.spec import parse_node_slo_spec
from koordlet.statesinformer.model import NodeInfo
from koordlet.util.steps import PODS_PER_STEP
from tests.koordlet.qosmanager.helpers import Rig, container, loop_turns_during, pod
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import (
    add_cgroup,
    build_resctrl_tree,
    build_v1_tree,
    build_v2_tree,
    set_cgroup_file,
    write_file,
)

GiB = 1 << 30
NODE = NodeInfo("node-a", capacity={"cpu": 4000, "memory": 16 * GiB},
                allocatable={"cpu": 4000, "memory": 16 * GiB})


def run(strategy, rig: Rig) -> None:
    asyncio.run(strategy.run(rig.ctx))


def read(host, controller: str, cgroup_dir: str, name: str) -> str:
    return (host.cgroup(controller, cgroup_dir, name) if controller else host.cgroup(cgroup_dir, name)) \
        .read_text().strip()


@pytest.fixture
def v1(tmp_path):
    host = build_v1_tree(tmp_path, cpus="0-3")
    for d in ("kubepods", "kubepods/besteffort", "kubepods/besteffort/podbe1",
              "kubepods/besteffort/podbe1/cbe1", "kubepods/burstable", "kubepods/burstable/podls1"):
        add_cgroup(host, d)
    rig = Rig(host, NODE, io=FakeTreeIO())
    rig.states.put(pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1", containers=(
        container("cbe1", "be1", "kubepods/besteffort/podbe1/cbe1"),)))
    rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1"))
    yield rig
    rig.close()


def usage(rig: Rig, node: float, **pods: float) -> None:
    now = rig.clock()
    rig.cache.put(Metric.NODE_CPU_USAGE_CORES, node, now)
    for uid, cores in pods.items():
        rig.cache.put(Metric.POD_CPU_USAGE_CORES, cores, now, uid)


def test_cfs_quota_policy_writes_formula_then_switching_restores_it(v1):
    v1.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cfsQuota"}}))
    usage(v1, node=1.6, ls1=1.0, be1=0.4)  # 4 cores * 50 % - LS 1.0 - system 0.2 = 0.8 cores
    strategy = CPUSuppress()
    run(strategy, v1)
    assert read(v1.host, "cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "80000"
    assert v1.metric("koordlet_be_suppress_cpu_cores", node="node-a", type="cfsQuota") == 0.8
    assert v1.metric("koordlet_qos_actions_total", strategy="cpu_suppress", action="cfs_quota") == 1

    v1.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cpuset"}}))
    run(strategy, v1)
    assert read(v1.host, "cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "-1"
    assert read(v1.host, "cpuset", "kubepods/besteffort", "cpuset.cpus") == "0-1"  # min 2 CPUs
    assert read(v1.host, "cpuset", "kubepods/besteffort/podbe1/cbe1", "cpuset.cpus") == "0-1"

    v1.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {"enable": False}}))
    run(strategy, v1)
    assert read(v1.host, "cpuset", "kubepods/besteffort/podbe1/cbe1", "cpuset.cpus") == "0-3"


def test_cpuset_suppress_reads_nothing_on_the_loop_thread(v1):
    """The tier's cpuset and the files the executor compares (a full pass re-reads them all)
    are read in a worker thread: an open() of a cgroup file can wait in the kernel."""
    v1.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cpuset"}}))
    usage(v1, node=1.6, ls1=1.0, be1=0.4)
    assert v1.io is not None
    on_loop = note_reads_on_loop(v1, v1.io)
    run(CPUSuppress(), v1)
    assert on_loop == []
    assert read(v1.host, "cpuset", "kubepods/besteffort", "cpuset.cpus") == "0-1"  # min 2 CPUs
    assert read(v1.host, "cpuset", "kubepods/besteffort/podbe1/cbe1", "cpuset.cpus") == "0-1"


def test_suppress_counts_a_pod_that_arrives_after_its_first_round(v1):
    v1.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cfsQuota"}}))
    usage(v1, node=1.6, ls1=1.0, be1=0.4)
    strategy = CPUSuppress()
    run(strategy, v1)
    assert read(v1.host, "cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "80000"
    add_cgroup(v1.host, "kubepods/burstable/podls2")
    v1.states.put(pod("ls2", KoordQoSClass.LS, "kubepods/burstable/podls2"))
    usage(v1, node=1.6, ls1=1.0, be1=0.4, ls2=0.4)  # 2 cores - LS 1.4 - system 0 = 0.6 cores
    run(strategy, v1)
    assert read(v1.host, "cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "60000"


def test_cpuset_policy_never_gives_lse_cpus(v1):
    v1.states.put(pod("lse", KoordQoSClass.LSE, "kubepods/podlse",
                      annotations={"scheduling.koordinator.sh/resource-status": '{"cpuset": "2-3"}'}))
    v1.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {"enable": True}}))
    usage(v1, node=0.1, ls1=0.0, be1=0.0)  # plenty of room: grows by at most ceil(0.4) = 1 a round
    set_cgroup_file(v1.host, "kubepods/besteffort", "cpuset.cpus", "0")
    strategy = CPUSuppress()
    run(strategy, v1)
    assert read(v1.host, "cpuset", "kubepods/besteffort", "cpuset.cpus") == "0-1"
    run(strategy, v1)
    assert read(v1.host, "cpuset", "kubepods/besteffort", "cpuset.cpus") == "0-1"  # only 2 non-LSE CPUs


def test_no_usage_means_no_change(v1):
    v1.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {"enable": True,
                                                                     "cpuSuppressPolicy": "cfsQuota"}}))
    run(CPUSuppress(), v1)
    assert read(v1.host, "cpu", "kubepods/besteffort", "cpu.cfs_quota_us") == "-1"


def test_memory_evict_round_then_cool_down(v1):
    v1.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {"enable": True}}))
    v1.states.put(pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1", priority=5000))  # no containers
    v1.states.put(pod("be2", KoordQoSClass.BE, "kubepods/besteffort/podbe2", priority=3000))
    now = v1.clock()
    v1.cache.put(Metric.NODE_MEMORY_USAGE_BYTES, 12 * GiB, now)  # 75 % of 16 GiB
    v1.cache.put(Metric.POD_MEMORY_USAGE_BYTES, 2 * GiB, now, "be1")
    v1.cache.put(Metric.POD_MEMORY_USAGE_BYTES, 1 * GiB, now, "be2")
    strategy = MemoryEvict()
    run(strategy, v1)
    # release 16 GiB * (75 - 68) % = 1.12 GiB: be2 first (lower priority), 1 GiB is not enough, then be1
    assert [uid for uid, _ in v1.evictor.calls] == ["be2", "be1"]
    assert v1.metric("koordlet_pod_eviction_total", node="node-a", reason="EvictPodByNodeMemoryUsage",
                     result="evicted") == 2
    v1.clock.now += 3.9
    v1.cache.put(Metric.NODE_MEMORY_USAGE_BYTES, 12 * GiB, v1.clock())
    v1.evictor.calls.clear()
    run(strategy, v1)
    assert v1.evictor.calls == []  # cool-down 4 s
    v1.clock.now += 0.2
    v1.cache.put(Metric.NODE_MEMORY_USAGE_BYTES, 12 * GiB, v1.clock())
    run(strategy, v1)
    assert v1.evictor.calls == []  # both were evicted already: the path does not repeat them


def test_eviction_path_refuses_non_be(v1):
    ls = v1.states.pod("ls1")
    done = asyncio.run(v1.ctx.evictions.evict([ls], EvictionReason.NODE_MEMORY_USAGE, "test"))
    assert done == [] and v1.evictor.calls == []


def test_cpu_burst_writes_burst_on_v1_and_v2(tmp_path):
    for version, builder, file_name in ((1, build_v1_tree, "cpu.cfs_burst_us"),
                                        (2, build_v2_tree, "cpu.max.burst")):
        host = builder(tmp_path / f"v{version}")
        for d in ("kubepods", "kubepods/burstable", "kubepods/burstable/podls1", "kubepods/burstable/podls1/c1"):
            add_cgroup(host, d)
        rig = Rig(host, NODE, io=FakeTreeIO())
        rig.set_slo(parse_node_slo_spec({"cpuBurstStrategy": {"policy": "cpuBurstOnly", "cpuBurstPercent": 200}}))
        rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1", containers=(
            container("c1", "ls1", "kubepods/burstable/podls1/c1", limits={"cpu": 1500}),)))
        run(CPUBurst(), rig)
        controller = "cpu" if version == 1 else ""
        assert read(host, controller, "kubepods/burstable/podls1/c1", file_name) == "300000"  # 1.5*200%*1e5
        assert read(host, controller, "kubepods/burstable/podls1", file_name) == "300000"
        rig.close()


def note_reads_on_loop(rig: Rig, io: FakeTreeIO) -> list[str]:
    """The reads (and cgroup lookups) made on the event loop's thread (asyncio.run's: the main
    thread) through the strategy's reader and the executor's IO, noted as they happen (the quota batches of
    QuotaReads.load go past both, so those run in a worker thread or not at all)."""
    on_loop: list[str] = []

    def noting(read):
        def wrapped(*args):
            if threading.current_thread() is threading.main_thread():
                on_loop.append(repr(args))
            return read(*args)
        return wrapped

    rig.ctx.reader.value = noting(rig.ctx.reader.value)  # type: ignore[method-assign]
    rig.ctx.reader.files.exists = noting(rig.ctx.reader.files.exists)  # type: ignore[method-assign]
    io.read, io.read_many = noting(io.read), noting(io.read_many)  # type: ignore[method-assign]
    return on_loop


def test_cpu_burst_reads_the_quotas_and_files_off_the_loop_and_clamps_to_the_quota(tmp_path):
    """The quotas a burst is clamped to and the files the executor compares are read in a
    worker thread (an open() of a cgroup file can wait in the kernel for tens of ms): nothing
    is read on the loop's thread, and the burst still stops at the cgroup's quota."""
    host = build_v1_tree(tmp_path)
    for d in ("kubepods", "kubepods/burstable", "kubepods/burstable/podls1", "kubepods/burstable/podls1/c1"):
        add_cgroup(host, d, {"cpu.cfs_quota_us": "150000"})
    io = FakeTreeIO()
    rig = Rig(host, NODE, io=io)
    rig.set_slo(parse_node_slo_spec({"cpuBurstStrategy": {"policy": "cpuBurstOnly", "cpuBurstPercent": 200}}))
    rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1", containers=(
        container("c1", "ls1", "kubepods/burstable/podls1/c1", limits={"cpu": 1500}),)))
    on_loop = note_reads_on_loop(rig, io)
    run(CPUBurst(), rig)
    assert on_loop == []
    assert read(host, "cpu", "kubepods/burstable/podls1/c1", "cpu.cfs_burst_us") == "150000"  # not 300000
    assert read(host, "cpu", "kubepods/burstable/podls1", "cpu.cfs_burst_us") == "150000"
    rig.close()


def test_a_burst_pass_over_many_pods_gives_the_loop_back_between_steps(tmp_path):
    host = build_v1_tree(tmp_path)
    rig = Rig(host, NODE, io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec({"cpuBurstStrategy": {"policy": "cpuBurstOnly", "cpuBurstPercent": 200}}))
    uids = ["ls%d" % i for i in range(3 * PODS_PER_STEP)]
    for d in ("kubepods", "kubepods/burstable"):
        add_cgroup(host, d)
    for uid in uids:
        add_cgroup(host, "kubepods/burstable/pod" + uid)
        add_cgroup(host, "kubepods/burstable/pod%s/c%s" % (uid, uid))
        rig.states.put(pod(uid, KoordQoSClass.LS, "kubepods/burstable/pod" + uid, containers=(
            container("c" + uid, uid, "kubepods/burstable/pod%s/c%s" % (uid, uid), limits={"cpu": 1000}),)))
    # every pod new: the first round writes every container's burst, the task running between its three steps
    assert loop_turns_during(lambda: CPUBurst().run(rig.ctx)) >= 2
    for uid in uids:
        assert read(host, "cpu", "kubepods/burstable/pod%s/c%s" % (uid, uid), "cpu.cfs_burst_us") == "200000"
    rig.close()


def test_cfs_quota_scales_up_when_throttled_and_node_idle(tmp_path):
    host = build_v1_tree(tmp_path)
    for d in ("kubepods", "kubepods/burstable", "kubepods/burstable/podls1", "kubepods/burstable/podls1/c1"):
        add_cgroup(host, d, {"cpu.cfs_quota_us": "100000"})
    io = FakeTreeIO()
    rig = Rig(host, NODE, io=io)
    rig.set_slo(parse_node_slo_spec({"cpuBurstStrategy": {"policy": "cfsQuotaBurstOnly"}}))
    rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1", containers=(
        container("c1", "ls1", "kubepods/burstable/podls1/c1", limits={"cpu": 1000}),)))
    now = rig.clock()
    for t in range(5):
        rig.cache.put(Metric.NODE_CPU_USAGE_CORES, 0.5, now - t)
    rig.cache.put(Metric.CONTAINER_CPU_THROTTLED_RATIO, 0.3, now, "ls1", "c1")
    on_loop = note_reads_on_loop(rig, io)
    run(CPUBurst(), rig)
    assert on_loop == []  # the quotas and the files compared were read in a worker thread
    assert read(host, "cpu", "kubepods/burstable/podls1/c1", "cpu.cfs_quota_us") == "120000"
    assert read(host, "cpu", "kubepods/burstable/podls1", "cpu.cfs_quota_us") == "120000"
    rig.close()


def test_cfs_quota_follows_throttling_and_pods_that_come_later(tmp_path):
    host = build_v1_tree(tmp_path)
    for d in ("kubepods", "kubepods/burstable", "kubepods/burstable/podls1", "kubepods/burstable/podls1/c1",
              "kubepods/burstable/podls2", "kubepods/burstable/podls2/c2"):
        add_cgroup(host, d, {"cpu.cfs_quota_us": "100000"})
    rig = Rig(host, NODE, io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec({"cpuBurstStrategy": {"policy": "cfsQuotaBurstOnly"}}))
    rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1", containers=(
        container("c1", "ls1", "kubepods/burstable/podls1/c1", limits={"cpu": 1000}),)))
    strategy = CPUBurst()
    for _ in range(2):  # not throttled: stays at its base quota
        rig.clock.now += 1
        rig.cache.put(Metric.NODE_CPU_USAGE_CORES, 0.5, rig.clock())
        rig.cache.put(Metric.CONTAINER_CPU_THROTTLED_RATIO, 0.0, rig.clock(), "ls1", "c1")
        run(strategy, rig)
    assert read(host, "cpu", "kubepods/burstable/podls1/c1", "cpu.cfs_quota_us") == "100000"
    rig.states.put(pod("ls2", KoordQoSClass.LS, "kubepods/burstable/podls2", containers=(
        container("c2", "ls2", "kubepods/burstable/podls2/c2", limits={"cpu": 1000}),)))
    rig.clock.now += 1
    rig.cache.put(Metric.NODE_CPU_USAGE_CORES, 0.5, rig.clock())
    for uid, cid in (("ls1", "c1"), ("ls2", "c2")):
        rig.cache.put(Metric.CONTAINER_CPU_THROTTLED_RATIO, 0.3, rig.clock(), uid, cid)
    run(strategy, rig)
    assert read(host, "cpu", "kubepods/burstable/podls1/c1", "cpu.cfs_quota_us") == "120000"
    assert read(host, "cpu", "kubepods/burstable/podls2/c2", "cpu.cfs_quota_us") == "120000"
    rig.close()


def test_memory_qos_on_v2_tree(tmp_path):
    host = build_v2_tree(tmp_path)
    for d in ("kubepods", "kubepods/burstable", "kubepods/burstable/podls1", "kubepods/burstable/podls1/c1"):
        add_cgroup(host, d)
    rig = Rig(host, NODE, io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec({"resourceQOSStrategy": {"lsClass": {"memoryQOS": {
        "enable": True, "minLimitPercent": 100, "lowLimitPercent": 0, "throttlingPercent": 80}}}}))
    rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1", containers=(
        container("c1", "ls1", "kubepods/burstable/podls1/c1", requests={"memory": 1 * GiB},
                  limits={"memory": 2 * GiB}),)))
    run(MemoryQoS(), rig)
    for d in ("kubepods", "kubepods/burstable"):  # ancestors hold the sum of their pods' protection
        assert read(host, "", d, "memory.min") == str(GiB)
        assert read(host, "", d, "memory.high") == "max"
    for d in ("kubepods/burstable/podls1", "kubepods/burstable/podls1/c1"):
        assert read(host, "", d, "memory.min") == str(GiB)
        assert read(host, "", d, "memory.low") == "0"  # lowLimitPercent 0: not raised to min (koordlet)
    # memory.high on the container only, as koordlet writes it
    assert read(host, "", "kubepods/burstable/podls1", "memory.high") == "max"
    assert read(host, "", "kubepods/burstable/podls1/c1", "memory.high") == str(2 * GiB * 80 // 100)
    rig.close()


def test_resctrl_groups_schemata_and_tasks(tmp_path):
    host = build_resctrl_tree(tmp_path, cbm_mask="7ff")
    build_v1_tree(tmp_path)
    for d in ("kubepods", "kubepods/besteffort", "kubepods/besteffort/podbe1", "kubepods/besteffort/podbe1/c1"):
        add_cgroup(host, d)
    set_cgroup_file(host, "kubepods/besteffort/podbe1/c1", "tasks", "4242\n4243\n")
    for group in ("LSR", "LS", "BE"):  # a fake tree cannot mkdir-populate like the kernel does
        write_file(host.sys("fs", "resctrl", group, "schemata"), "L3:0=7ff;1=7ff\nMB:0=100;1=100\n")
        write_file(host.sys("fs", "resctrl", group, "tasks"), "")
    rig = Rig(host, NODE, io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec({"resourceQOSStrategy": {"beClass": {"resctrlQOS": {
        "enable": True, "catRangeStartPercent": 0, "catRangeEndPercent": 30, "mbaPercent": 50}}}}))
    rig.states.put(pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1", containers=(
        container("c1", "be1", "kubepods/besteffort/podbe1/c1"),)))
    run(ResctrlQoS(), rig)
    be = host.sys("fs", "resctrl", "BE")
    assert be.joinpath("schemata").read_text() == "L3:0=f;1=f\nMB:0=50;1=50\n"  # only changed lines
    assert be.joinpath("tasks").read_text() == "4243\n"  # a regular file keeps the last write only
    assert rig.metric("koordlet_qos_actions_total", strategy="resctrl", action="tasks") == 2
    assert not host.sys("fs", "resctrl", "LS", "schemata").read_text().startswith("L3:0=f;")
    rig.close()


def test_resctrl_schemata_drift_is_repaired_on_the_resync_pass(tmp_path):
    host = build_resctrl_tree(tmp_path, cbm_mask="7ff")
    build_v1_tree(tmp_path)
    whole = "L3:0=7ff;1=7ff\nMB:0=100;1=100\n"
    for group in ("LSR", "LS", "BE"):
        write_file(host.sys("fs", "resctrl", group, "schemata"), whole)
        write_file(host.sys("fs", "resctrl", group, "tasks"), "")
    rig = Rig(host, NODE, io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec({"resourceQOSStrategy": {"beClass": {"resctrlQOS": {
        "enable": True, "catRangeStartPercent": 0, "catRangeEndPercent": 30, "mbaPercent": 50}}}}))
    strategy = ResctrlQoS()
    run(strategy, rig)
    schemata = host.sys("fs", "resctrl", "BE", "schemata")
    assert schemata.read_text() == "L3:0=f;1=f\nMB:0=50;1=50\n"
    schemata.write_text(whole)  # someone else resets the group
    rig.clock.now += 1
    run(strategy, rig)
    assert schemata.read_text() == whole  # between passes the groups are not read again
    rig.clock.now += RESYNC_SECONDS
    run(strategy, rig)
    assert schemata.read_text() == "L3:0=f;1=f\nMB:0=50;1=50\n"
    rig.close()


def test_cpu_evict_reads_the_be_series_and_evicts_by_priority_then_pressure(v1):
    from koordlet.qosmanager.cpu_evict import CPUEvict

    v1.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuEvictBESatisfactionLowerPercent": 40, "cpuEvictBESatisfactionUpperPercent": 80,
        "cpuEvictTimeWindowSeconds": 3}}))
    v1.states.put(pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1", priority=5000, containers=(
        container("cbe1", "be1", "kubepods/besteffort/podbe1/cbe1", requests={"kubernetes.io/batch-cpu": 2000}),)))
    v1.states.put(pod("be2", KoordQoSClass.BE, "kubepods/besteffort/podbe2", priority=5000, containers=(
        container("cbe2", "be2", "kubepods/besteffort/podbe2/cbe2", requests={"kubernetes.io/batch-cpu": 1000}),)))
    strategy = CPUEvict()
    for _ in range(3):  # BE: real limit 1 core, request 3 cores (satisfaction 0.33 < 0.4), using all of it
        v1.clock.now += 1
        for metric, value in ((Metric.BE_CPU_LIMIT_CORES, 1.0), (Metric.BE_CPU_REQUEST_CORES, 3.0),
                              (Metric.BE_CPU_USAGE_CORES, 0.95)):
            v1.cache.put(metric, value, v1.clock())
        v1.cache.put(Metric.POD_CPU_USAGE_CORES, 0.5, v1.clock(), "be1")
        v1.cache.put(Metric.POD_CPU_USAGE_CORES, 0.45, v1.clock(), "be2")
    run(strategy, v1)
    # release 3000m * (0.8 - 0.33) = 1400m; be2 uses 45 % of its request, be1 25 %: be2 first (1000m), then be1
    assert [uid for uid, _ in v1.evictor.calls] == ["be2", "be1"]
    v1.evictor.calls.clear()
    v1.clock.now += 19  # cool-down 20 s
    for metric, value in ((Metric.BE_CPU_LIMIT_CORES, 1.0), (Metric.BE_CPU_REQUEST_CORES, 3.0),
                          (Metric.BE_CPU_USAGE_CORES, 0.95)):
        v1.cache.put(metric, value, v1.clock())
    run(strategy, v1)
    assert v1.evictor.calls == []


def test_suppress_on_cgroup_v2_writes_cpu_max_and_cpuset(tmp_path):
    host = build_v2_tree(tmp_path, cpus="0-3")
    for d in ("kubepods", "kubepods/besteffort", "kubepods/besteffort/podbe1", "kubepods/besteffort/podbe1/cbe1"):
        add_cgroup(host, d, {"cpuset.cpus": "0-3", "cpuset.cpus.effective": "0-3"})
    rig = Rig(host, NODE, io=FakeTreeIO())
    rig.states.put(pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1", containers=(
        container("cbe1", "be1", "kubepods/besteffort/podbe1/cbe1"),)))
    rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1"))
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cfsQuota"}}))
    usage(rig, node=1.6, ls1=1.0, be1=0.4)
    strategy = CPUSuppress()
    run(strategy, rig)
    assert read(host, "", "kubepods/besteffort", "cpu.max") == "80000 100000"  # the period is kept
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cpuset"}}))
    run(strategy, rig)
    assert read(host, "", "kubepods/besteffort", "cpu.max") == "max 100000"
    assert read(host, "", "kubepods/besteffort/podbe1/cbe1", "cpuset.cpus") == "0-1"
    rig.close()


def test_pod_cpu_burst_annotation_overrides_the_node(tmp_path):
    host = build_v1_tree(tmp_path)
    for d in ("kubepods", "kubepods/burstable", "kubepods/burstable/poda", "kubepods/burstable/poda/c1",
              "kubepods/burstable/podb", "kubepods/burstable/podb/c1"):
        add_cgroup(host, d)
    rig = Rig(host, NODE, io=FakeTreeIO())  # node policy: none
    for uid, text in (("a", '{"policy": "cpuBurstOnly", "cpuBurstPercent": 300}'),
                      ("b", '{"policy": "cpuBurstOnly", "cpuBurstPercent": "lots"}')):
        rig.states.put(pod(uid, KoordQoSClass.LS, f"kubepods/burstable/pod{uid}",
                           annotations={"koordinator.sh/cpuBurst": text}, containers=(
                               container(f"{uid}1", uid, f"kubepods/burstable/pod{uid}/c1",
                                         limits={"cpu": 500}),)))
    run(CPUBurst(), rig)
    assert read(host, "cpu", "kubepods/burstable/poda/c1", "cpu.cfs_burst_us") == "150000"  # 0.5 * 300 % * 1e5
    assert read(host, "cpu", "kubepods/burstable/podb/c1", "cpu.cfs_burst_us") == "0"  # invalid: node settings
    rig.close()


def test_memory_qos_leaves_files_alone_until_enabled_and_resets_once_after(tmp_path):
    host = build_v2_tree(tmp_path)
    for d in ("kubepods", "kubepods/burstable", "kubepods/burstable/podls1"):
        add_cgroup(host, d, {"memory.min": "4096"})  # as kubelet's own MemoryQoS might have set it
    rig = Rig(host, NODE, io=FakeTreeIO())
    rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1", containers=(
        container("c1", "ls1", "kubepods/burstable/podls1/c1", requests={"memory": GiB}),)))
    strategy = MemoryQoS()
    run(strategy, rig)
    assert read(host, "", "kubepods/burstable/podls1", "memory.min") == "4096"
    rig.set_slo(parse_node_slo_spec({"resourceQOSStrategy": {"lsClass": {"memoryQOS": {
        "enable": True, "minLimitPercent": 50}}}}))
    run(strategy, rig)
    assert read(host, "", "kubepods/burstable/podls1", "memory.min") == str(GiB // 2)
    rig.set_slo(parse_node_slo_spec({}))
    run(strategy, rig)
    assert read(host, "", "kubepods/burstable/podls1", "memory.min") == "0"
    assert read(host, "", "kubepods", "memory.min") == "0"
    set_cgroup_file(host, "kubepods/burstable/podls1", "memory.min", "4096")
    rig.clock.now += 61
    run(strategy, rig)
    assert read(host, "", "kubepods/burstable/podls1", "memory.min") == "4096"  # off: not touched again
    rig.close()


def test_cpuset_with_kubelet_static_policy_suppresses_containers_only(tmp_path):
    host = build_v1_tree(tmp_path, cpus="0-3")
    for d in ("kubepods", "kubepods/besteffort", "kubepods/besteffort/podbe1", "kubepods/besteffort/podbe1/cbe1"):
        add_cgroup(host, d)
    node = NodeInfo("node-a", capacity=NODE.capacity, allocatable=NODE.allocatable,
                    annotations={"kubelet.koordinator.sh/cpu-manager-policy": '{"policy": "static"}'})
    rig = Rig(host, node, io=FakeTreeIO())
    rig.states.put(pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1", containers=(
        container("cbe1", "be1", "kubepods/besteffort/podbe1/cbe1"),)))
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {"enable": True}}))
    usage(rig, node=3.0, be1=0.1)  # busy node: the 2-CPU minimum
    run(CPUSuppress(), rig)
    assert read(host, "cpuset", "kubepods/besteffort/podbe1/cbe1", "cpuset.cpus") == "0-1"
    assert read(host, "cpuset", "kubepods/besteffort/podbe1", "cpuset.cpus") == "0-3"
    assert read(host, "cpuset", "kubepods/besteffort", "cpuset.cpus") == "0-3"
    rig.close()


def test_a_failed_memory_eviction_starts_no_cool_down(tmp_path):
    from tests.koordlet.qosmanager.helpers import RecordingEvictor

    rig = Rig(build_v1_tree(tmp_path), NodeInfo("node-a", capacity={"cpu": 4000, "memory": 16 * GiB}),
              evictor=RecordingEvictor(succeed=False), io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {"enable": True}}))
    rig.states.put(pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1", priority=5000))
    strategy = MemoryEvict()
    for _ in range(2):  # the same second: a cool-down would keep the second round quiet
        rig.cache.put(Metric.NODE_MEMORY_USAGE_BYTES, 12 * GiB, rig.clock())
        rig.cache.put(Metric.POD_MEMORY_USAGE_BYTES, 2 * GiB, rig.clock(), "be1")
        run(strategy, rig)
    assert [uid for uid, _ in rig.evictor.calls] == ["be1", "be1"]
    rig.close()
