"""Where the values written must be the ones koordlet writes (facts from koordlet v1.1's
qosmanager and its unit tests; the code is ours)."""

from __future__ import annotations

import pytest

from koordlet.apis.keys import BATCH_MEMORY
from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric
from koordlet.qosmanager.cpu_burst import CPUBurst
from koordlet.qosmanager.cpu_burst_policy import NodeBurstState, node_burst_state
from koordlet.qosmanager.cpu_suppress import (
    CPUSET_RESYNC_SECONDS,
    READ_BACK_PODS_PER_STEP,
    RESTORE_RESYNC_SECONDS,
    CPUSuppress,
)
from koordlet.qosmanager.memory_qos import MemoryQoS, memory_qos_values, pod_memory_request
from koordlet.slo.node_slo import MemoryQOS, NodeSLOError
from koordlet.slo.spec import parse_node_slo_spec, pod_memory_qos
from koordlet.statesinformer.model import (
    ContainerInfo,
    ContainerKind,
    ContainerRole,
    ContainerState,
    NodeInfo,
    PodInfo,
    Resources,
)
from koordlet.util.steps import PODS_PER_STEP
from tests.koordlet.qosmanager.helpers import Rig, container, loop_turns_during, pod
from tests.koordlet.qosmanager.test_strategies_fake_trees import NODE, read, run, usage
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import add_cgroup, build_v1_tree, build_v2_tree, set_cgroup_file

# -- CPU burst --------------------------------------------------------------------------


def scaled_pod_rig(tmp_path, quotas: dict[str, int], throttled: float, node_used: float = 0.5,
                   bases: dict[str, int] | None = None) -> Rig:
    bases = bases or quotas
    host = build_v1_tree(tmp_path)
    add_cgroup(host, "kubepods")
    add_cgroup(host, "kubepods/burstable")
    add_cgroup(host, "kubepods/burstable/podls1", {"cpu.cfs_quota_us": str(sum(quotas.values()))})
    containers = []
    for name, quota in quotas.items():
        add_cgroup(host, f"kubepods/burstable/podls1/{name}", {"cpu.cfs_quota_us": str(quota)})
        containers.append(container(name, "ls1", f"kubepods/burstable/podls1/{name}",
                                    limits={"cpu": bases[name] // 100}))
    rig = Rig(host, NODE, io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec({"cpuBurstStrategy": {"policy": "cfsQuotaBurstOnly"}}))
    rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1", containers=tuple(containers)))
    now = rig.clock()
    for t in range(5):
        rig.cache.put(Metric.NODE_CPU_USAGE_CORES, node_used, now - t)
    for name in quotas:
        rig.cache.put(Metric.CONTAINER_CPU_THROTTLED_RATIO, throttled, now, "ls1", name)
    return rig


BASES = {"c1": 200000, "c2": 300000}  # 2 and 3 CPU limits


@pytest.mark.parametrize("node_used, throttled, start, want_containers", [
    # idle node, throttled: x1.2 each from the base
    (0.5, 0.3, BASES, {"c1": 240000, "c2": 360000}),
    # overloaded node: x0.8 each from quotas scaled up earlier (1.5 x base)
    (4.0, 0.0, {"c1": 300000, "c2": 450000}, {"c1": 240000, "c2": 360000}),
])
def test_two_containers_of_one_pod_scaled_in_one_round_add_up_in_the_pod(tmp_path, node_used, throttled, start,
                                                                         want_containers):
    rig = scaled_pod_rig(tmp_path, start, throttled, node_used, bases=BASES)
    strategy = CPUBurst()
    run(strategy, rig)
    for name, want in want_containers.items():
        assert read(rig.host, "cpu", f"kubepods/burstable/podls1/{name}", "cpu.cfs_quota_us") == str(want)
    assert read(rig.host, "cpu", "kubepods/burstable/podls1", "cpu.cfs_quota_us") == str(sum(want_containers.values()))
    rig.close()


@pytest.mark.parametrize("cpus, state", [(0, NodeBurstState.UNKNOWN), (-1, NodeBurstState.UNKNOWN),
                                         (4, NodeBurstState.IDLE)])
def test_without_the_nodes_cpus_the_state_is_unknown_not_overload(cpus, state):
    assert node_burst_state(cpus, 0.5, 0.0, 0.0, 50) is state


def test_with_no_cpu_info_quotas_are_held(tmp_path):
    start = {"c1": 240000}
    host = build_v1_tree(tmp_path)
    add_cgroup(host, "kubepods/burstable/podls1", {"cpu.cfs_quota_us": "240000"})
    add_cgroup(host, "kubepods/burstable/podls1/c1", {"cpu.cfs_quota_us": "240000"})
    node = NodeInfo("node-a")  # no capacity known, no topology
    rig = Rig(host, node, io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec({"cpuBurstStrategy": {"policy": "cfsQuotaBurstOnly"}}))
    rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1", containers=(
        container("c1", "ls1", "kubepods/burstable/podls1/c1", limits={"cpu": 2000}),)))
    for t in range(5):
        rig.cache.put(Metric.NODE_CPU_USAGE_CORES, 3.9, rig.clock() - t)
    strategy = CPUBurst()
    strategy.scaled.update(start)
    strategy.seen.update(start)
    run(strategy, rig)
    assert read(host, "cpu", "kubepods/burstable/podls1/c1", "cpu.cfs_quota_us") == "240000"  # not scaled down
    rig.close()


# -- CPU suppress -----------------------------------------------------------------------


def suppress_rig(tmp_path, node: NodeInfo = NODE, with_pods: bool = True) -> Rig:
    host = build_v1_tree(tmp_path, cpus="0-3")
    for d in ("kubepods", "kubepods/besteffort", "kubepods/besteffort/podbe1", "kubepods/besteffort/podbe1/cbe1",
              "kubepods/burstable", "kubepods/burstable/podls1"):
        add_cgroup(host, d)
    rig = Rig(host, node, io=FakeTreeIO())
    if with_pods:
        rig.states.put(pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1", containers=(
            container("cbe1", "be1", "kubepods/besteffort/podbe1/cbe1"),)))
        rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1"))
    return rig


def suppressing_with_cpusets(tmp_path):
    """The rig after one round of CPU suppress with the cpuset policy in force."""
    rig = suppress_rig(tmp_path)
    strategy = CPUSuppress()
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cpuset"}}))
    usage(rig, 1.5, ls1=1.0)
    run(strategy, rig)
    return rig, strategy


def test_after_switching_to_cfs_quota_the_restored_cpuset_is_reasserted_each_resync(tmp_path):
    rig, strategy = suppressing_with_cpusets(tmp_path)
    assert read(rig.host, "cpuset", "kubepods/besteffort", "cpuset.cpus") != "0-3"
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cfsQuota"}}))
    usage(rig, 1.5, ls1=1.0)
    run(strategy, rig)  # restored once
    assert read(rig.host, "cpuset", "kubepods/besteffort", "cpuset.cpus") == "0-3"
    for cgroup in ("kubepods/besteffort", "kubepods/besteffort/podbe1"):  # someone narrows them
        set_cgroup_file(rig.host, cgroup, "cpuset.cpus", "1")
    usage(rig, 1.5, ls1=1.0)
    run(strategy, rig)  # unchanged pods: not read back every second
    assert read(rig.host, "cpuset", "kubepods/besteffort/podbe1", "cpuset.cpus") == "1"
    rig.clock.now += RESTORE_RESYNC_SECONDS - 1
    usage(rig, 1.5, ls1=1.0)
    run(strategy, rig)  # within the window: still as someone left it
    assert read(rig.host, "cpuset", "kubepods/besteffort/podbe1", "cpuset.cpus") == "1"
    rig.clock.now += 1
    usage(rig, 1.5, ls1=1.0)
    run(strategy, rig)
    for cgroup in ("kubepods/besteffort", "kubepods/besteffort/podbe1", "kubepods/besteffort/podbe1/cbe1"):
        assert read(rig.host, "cpuset", cgroup, "cpuset.cpus") == "0-3", cgroup
    rig.close()


def test_with_suppress_off_a_new_be_pod_gets_the_full_cpuset_the_next_round(tmp_path):
    rig = suppress_rig(tmp_path)
    strategy = CPUSuppress()
    run(strategy, rig)  # the default NodeSLO: suppress off, the full pass restores
    for d in ("kubepods/besteffort/podbe2", "kubepods/besteffort/podbe2/cbe2"):
        add_cgroup(rig.host, d)
        set_cgroup_file(rig.host, d, "cpuset.cpus", "2")  # as a runtime may leave it
    rig.states.put(pod("be2", KoordQoSClass.BE, "kubepods/besteffort/podbe2", containers=(
        container("cbe2", "be2", "kubepods/besteffort/podbe2/cbe2"),)))
    rig.clock.now += 1
    run(strategy, rig)
    for d in ("kubepods/besteffort/podbe2", "kubepods/besteffort/podbe2/cbe2"):
        assert read(rig.host, "cpuset", d, "cpuset.cpus") == "0-3", d
    rig.close()


def add_be_pods(rig: Rig, uids: list[str]) -> None:
    """BE pods of one container each, their containers' cpusets left at CPU 3."""
    for uid in uids:
        add_cgroup(rig.host, "kubepods/besteffort/pod" + uid)
        add_cgroup(rig.host, "kubepods/besteffort/pod%s/c%s" % (uid, uid))
        set_cgroup_file(rig.host, "kubepods/besteffort/pod%s/c%s" % (uid, uid), "cpuset.cpus", "3")
        rig.states.put(pod(uid, KoordQoSClass.BE, "kubepods/besteffort/pod" + uid, containers=(
            container("c" + uid, uid, "kubepods/besteffort/pod%s/c%s" % (uid, uid)),)))


def test_a_full_cpuset_pass_over_many_be_pods_gives_the_loop_back_between_steps(tmp_path):
    rig = suppress_rig(tmp_path)
    uids = ["many%d" % i for i in range(3 * PODS_PER_STEP)]
    add_be_pods(rig, uids)
    # suppress off: the first round restores every BE cpuset, the task running between its steps
    assert loop_turns_during(lambda: CPUSuppress().run(rig.ctx)) >= 3
    for uid in uids:
        assert read(rig.host, "cpuset", "kubepods/besteffort/pod%s/c%s" % (uid, uid), "cpuset.cpus") == "0-3"
    rig.close()


def test_a_full_cpuset_pass_reads_back_fewer_pods_a_step(tmp_path):
    # as many BE pods as one step of changed pods holds: the full pass, which reads back
    # every file, still gives the loop back between smaller steps
    rig = suppress_rig(tmp_path)
    uids = ["back%d" % i for i in range(PODS_PER_STEP)]
    add_be_pods(rig, uids)
    assert READ_BACK_PODS_PER_STEP < PODS_PER_STEP
    steps = -(-len(uids) // READ_BACK_PODS_PER_STEP)
    assert loop_turns_during(lambda: CPUSuppress().run(rig.ctx)) >= steps  # after the tier's step, one per step
    for uid in uids:
        assert read(rig.host, "cpuset", "kubepods/besteffort/pod%s/c%s" % (uid, uid), "cpuset.cpus") == "0-3"
    rig.close()


@pytest.mark.parametrize("node, with_pods", [(NODE, False), (NodeInfo("node-a"), True)])
def test_with_no_pods_or_no_capacity_a_round_writes_nothing(tmp_path, node, with_pods):
    rig = suppress_rig(tmp_path, node, with_pods)
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cfsQuota"}}))
    usage(rig, 3.5)
    before = {d: read(rig.host, c, d, f) for c, d, f in (
        ("cpu", "kubepods/besteffort", "cpu.cfs_quota_us"), ("cpuset", "kubepods/besteffort", "cpuset.cpus"))}
    run(CPUSuppress(), rig)
    assert {d: read(rig.host, c, d, f) for c, d, f in (
        ("cpu", "kubepods/besteffort", "cpu.cfs_quota_us"), ("cpuset", "kubepods/besteffort", "cpuset.cpus"))} \
        == before
    rig.close()


# -- memory QoS -------------------------------------------------------------------------

MiB = 1 << 20
GiB = 1 << 30
LS_MIN_100 = {"resourceQOSStrategy": {"lsClass": {"memoryQOS": {
    "enable": True, "minLimitPercent": 100, "lowLimitPercent": 0, "throttlingPercent": 80}}}}
BE_ON = {"resourceQOSStrategy": {"beClass": {"memoryQOS": {
    "enable": True, "minLimitPercent": 50, "lowLimitPercent": 100, "throttlingPercent": 90}}}}


def memory_rig(tmp_path, slo: dict, *pods) -> Rig:
    host = build_v2_tree(tmp_path)
    for tier in ("kubepods", "kubepods/burstable", "kubepods/besteffort"):
        add_cgroup(host, tier)
    rig = Rig(host, NODE, io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec(slo))
    for item in pods:
        add_cgroup(host, item.cgroup_parent)
        for c in item.containers:
            add_cgroup(host, c.cgroup_dir)
        rig.states.put(item)
    return rig


def ls_pod(uid: str = "ls1", annotations=None, requests=({"memory": GiB}, {})) -> PodInfo:
    parent = f"kubepods/burstable/pod{uid}"
    return pod(uid, KoordQoSClass.LS, parent, annotations=annotations, containers=tuple(
        container(f"c{i}", uid, f"{parent}/c{i}", requests=r, limits={"memory": 2 * GiB} if r else {})
        for i, r in enumerate(requests)))


def test_a_container_without_a_request_adds_nothing_to_the_pods(tmp_path):
    rig = memory_rig(tmp_path, LS_MIN_100, ls_pod())  # c0 asks 1 GiB, c1 asks nothing
    run(MemoryQoS(), rig)
    for d in ("kubepods", "kubepods/burstable", "kubepods/burstable/podls1", "kubepods/burstable/podls1/c0"):
        assert read(rig.host, "", d, "memory.min") == str(GiB), d
    assert read(rig.host, "", "kubepods/burstable/podls1/c1", "memory.min") == "0"
    rig.close()


@pytest.mark.parametrize("app, init, want", [
    ([GiB, 0], [], GiB),
    ([GiB, 512 * MiB], [], GiB + 512 * MiB),
    ([GiB], [3 * GiB], 3 * GiB),  # a larger init container sets the pod's request (kubelet)
    ([2 * GiB], [GiB], 2 * GiB),
])
def test_pod_memory_request_is_kubelets(app, init, want):
    def c(name: str, request: int, kind: ContainerKind) -> ContainerInfo:
        return ContainerInfo(name, name, "p", ContainerState.RUNNING, "", spec=Resources(
            {"memory": request} if request else {}), role=ContainerRole(kind))

    containers = tuple(c(f"a{i}", r, ContainerKind.MAIN) for i, r in enumerate(app)) + \
        tuple(c(f"i{i}", r, ContainerKind.INIT) for i, r in enumerate(init))
    assert pod_memory_request(pod("p", KoordQoSClass.LS, containers=containers)) == want


def test_be_pods_are_sized_by_batch_memory(tmp_path):
    parent = "kubepods/besteffort/podbe1"
    be = pod("be1", KoordQoSClass.BE, parent, containers=(
        container("c0", "be1", f"{parent}/c0", requests={BATCH_MEMORY: GiB}, limits={BATCH_MEMORY: 2 * GiB}),))
    rig = memory_rig(tmp_path, BE_ON, be)
    run(MemoryQoS(), rig)
    assert read(rig.host, "", f"{parent}/c0", "memory.min") == str(GiB // 2)
    assert read(rig.host, "", f"{parent}/c0", "memory.low") == str(GiB)
    assert read(rig.host, "", f"{parent}/c0", "memory.high") == str(2 * GiB * 90 // 100)
    assert read(rig.host, "", parent, "memory.min") == str(GiB // 2)
    rig.close()


@pytest.mark.parametrize("annotation, want_min", [
    ('{"minLimitPercent": 50}', GiB // 2),  # the pod's field over its class's
    ('{"policy": "default"}', GiB),  # nothing of its own: the class's
    ('{"policy": "none"}', 0),  # memory QoS off for this pod
    ('{"policy": "auto"}', 0),  # koordlet's default config: minLimitPercent 0
    ('{"policy": "auto", "minLimitPercent": 25}', GiB // 4),
    ('{"minLimitPercent": 500}', GiB),  # invalid: ignored, the class's applies
    ('{"enable": true}', GiB),  # not a pod-level field: invalid
    ('not json', GiB),
])
def test_the_pod_memory_qos_annotation_is_merged_over_its_class(tmp_path, annotation, want_min):
    rig = memory_rig(tmp_path, LS_MIN_100, ls_pod(annotations={"koordinator.sh/memoryQOS": annotation},
                                                  requests=({"memory": GiB},)))
    run(MemoryQoS(), rig)
    assert read(rig.host, "", "kubepods/burstable/podls1/c0", "memory.min") == str(want_min)
    assert read(rig.host, "", "kubepods/burstable/podls1", "memory.min") == str(want_min)
    rig.close()


def test_a_pod_asking_for_memory_qos_gets_it_while_its_class_has_it_off(tmp_path):
    annotation = '{"minLimitPercent": 100, "throttlingPercent": 50}'
    rig = memory_rig(tmp_path, {}, ls_pod(annotations={"koordinator.sh/memoryQOS": annotation},
                                          requests=({"memory": GiB},)))
    run(MemoryQoS(), rig)
    assert read(rig.host, "", "kubepods/burstable/podls1/c0", "memory.min") == str(GiB)
    assert read(rig.host, "", "kubepods/burstable/podls1/c0", "memory.high") == str(GiB)
    assert read(rig.host, "", "kubepods", "memory.min") == str(GiB)
    rig.close()


@pytest.mark.parametrize("request_bytes, limit, percents, want", [
    # (min%, low%, throttling%) -> (min, low, high); koordlet's rules
    (GiB, 2 * GiB, (100, 0, 80), (GiB, 0, 2 * GiB * 80 // 100)),  # low 0 stays 0
    (GiB, 2 * GiB, (100, 50, 0), (GiB, GiB, -1)),  # a set low below min is raised; throttling 0: max
    (GiB, 0, (0, 0, 50), (0, 0, 8 * GiB)),  # no limit: node allocatable (16 GiB) stands in
    (GiB, GiB, (100, 100, 10), (GiB, GiB, GiB)),  # high never below min
])
def test_memory_qos_values_table(request_bytes, limit, percents, want):
    cfg = MemoryQOS(enable=True, min_limit_percent=percents[0], low_limit_percent=percents[1],
                    throttling_percent=percents[2])
    values = memory_qos_values(request_bytes, limit, 16 * GiB, cfg)
    assert (values.min, values.low, values.high) == want


def test_pod_memory_qos_refuses_with_the_field_named():
    with pytest.raises(NodeSLOError, match="policy"):
        pod_memory_qos(MemoryQOS(), MemoryQOS(), '{"policy": "sometimes"}')
    with pytest.raises(NodeSLOError, match="minLimitPercent"):
        pod_memory_qos(MemoryQOS(), MemoryQOS(), '{"minLimitPercent": -1}')


def test_while_suppressing_a_widened_be_cpuset_is_narrowed_again_within_the_shorter_resync(tmp_path):
    rig, strategy = suppressing_with_cpusets(tmp_path)
    narrowed = read(rig.host, "cpuset", "kubepods/besteffort/podbe1", "cpuset.cpus")
    assert narrowed != "0-3"
    set_cgroup_file(rig.host, "kubepods/besteffort/podbe1/cbe1", "cpuset.cpus", "0-3")  # as kubelet's CPU manager may
    rig.clock.now += 1
    usage(rig, 1.5, ls1=1.0)
    run(strategy, rig)
    assert read(rig.host, "cpuset", "kubepods/besteffort/podbe1/cbe1", "cpuset.cpus") == "0-3"
    rig.clock.now += CPUSET_RESYNC_SECONDS
    usage(rig, 1.5, ls1=1.0)
    run(strategy, rig)
    assert CPUSET_RESYNC_SECONDS < RESTORE_RESYNC_SECONDS
    assert read(rig.host, "cpuset", "kubepods/besteffort/podbe1/cbe1", "cpuset.cpus") == narrowed
    rig.close()
