"""Where the values written must be the ones koordlet writes (facts from koordlet v1.1's
qosmanager and its unit tests; the code is ours)."""

from __future__ import annotations

import pytest

from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric
from koordlet.qosmanager.cpu_burst import CPUBurst
from koordlet.qosmanager.cpu_burst_policy import NodeBurstState, node_burst_state
from koordlet.qosmanager.cpu_suppress import CPUSuppress
from koordlet.slo.spec import parse_node_slo_spec
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.qosmanager.helpers import Rig, container, pod
from tests.koordlet.qosmanager.test_strategies_fake_trees import NODE, read, run, usage
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import add_cgroup, build_v1_tree, set_cgroup_file

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


def test_after_switching_to_cfs_quota_the_restored_cpuset_is_reasserted_every_round(tmp_path):
    rig = suppress_rig(tmp_path)
    strategy = CPUSuppress()
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cpuset"}}))
    usage(rig, 1.5, ls1=1.0)
    run(strategy, rig)
    assert read(rig.host, "cpuset", "kubepods/besteffort", "cpuset.cpus") != "0-3"
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cfsQuota"}}))
    usage(rig, 1.5, ls1=1.0)
    run(strategy, rig)  # restored once
    assert read(rig.host, "cpuset", "kubepods/besteffort", "cpuset.cpus") == "0-3"
    for cgroup in ("kubepods/besteffort", "kubepods/besteffort/podbe1"):  # someone narrows them
        set_cgroup_file(rig.host, cgroup, "cpuset.cpus", "1")
    usage(rig, 1.5, ls1=1.0)
    run(strategy, rig)
    for cgroup in ("kubepods/besteffort", "kubepods/besteffort/podbe1", "kubepods/besteffort/podbe1/cbe1"):
        assert read(rig.host, "cpuset", cgroup, "cpuset.cpus") == "0-3", cgroup
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
