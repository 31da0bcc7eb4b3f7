"""QoS strategies against the real kernel: cgroup v1 hierarchies made by the test.

Usage is injected through the test metric cache (the collectors are another module);
every write lands in real cgroups under a koordlet-test-<hex8> sandbox, removed after.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from koordlet.apis.qos import KoordQoSClass
from koordlet.metriccache.api import Metric
from koordlet.qosmanager.cpu_burst import CPUBurst
from koordlet.qosmanager.cpu_suppress import CPUSuppress
from koordlet.slo.node_slo import CPUSuppressPolicy
from koordlet.slo.spec import parse_node_slo_spec
from koordlet.statesinformer.model import NodeInfo
from system.host import Host
from tests.koordlet.qosmanager.helpers import Rig, container, pod

pytestmark = pytest.mark.kernel

def online_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@pytest.fixture
def rig(sandbox):
    host, name = sandbox
    cpus = online_cpus()
    node = NodeInfo("node-k", capacity={"cpu": cpus * 1000, "memory": 1 << 33},
                    allocatable={"cpu": cpus * 1000, "memory": 1 << 33})
    rig = Rig(host, node, prefix=name)
    rig.states.put(pod("be1", KoordQoSClass.BE, f"{name}/kubepods/besteffort/podbe1", containers=(
        container("cbe1", "be1", f"{name}/kubepods/besteffort/podbe1/cbe1"),)))
    rig.states.put(pod("ls1", KoordQoSClass.LS, f"{name}/kubepods/burstable/podls1", containers=(
        container("cls1", "ls1", f"{name}/kubepods/burstable/podls1/cls1", limits={"cpu": 1000}),)))
    yield rig
    rig.close()


def kernel_file(host: Host, controller: str, name: str, relative: str, file_name: str) -> str:
    return Path(host.cgroup(controller, name, relative, file_name)).read_text().strip()


def busy(rig: Rig, node: float, ls: float, be: float) -> None:
    rig.clock.now += 1
    rig.cache.put(Metric.NODE_CPU_USAGE_CORES, node, rig.clock())
    rig.cache.put(Metric.POD_CPU_USAGE_CORES, ls, rig.clock(), "ls1")
    rig.cache.put(Metric.POD_CPU_USAGE_CORES, be, rig.clock(), "be1")


def test_be_quota_shrinks_while_ls_busy_and_grows_back(rig, sandbox):
    host, name = sandbox
    if online_cpus() != 2:
        pytest.skip("expected figures are for this 2-CPU machine")
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cfsQuota"}}))
    strategy = CPUSuppress()
    quota = lambda: kernel_file(host, "cpu", name, "kubepods/besteffort", "cpu.cfs_quota_us")  # noqa: E731
    assert quota() == "-1"
    # LS spinning on 0.9 core, BE 0.05, system 0.05: 2 cores * 50 % - 0.9 - 0.05 = 0.05 core -> 5000 us
    busy(rig, node=1.0, ls=0.9, be=0.05)
    asyncio.run(strategy.run(rig.ctx))
    assert quota() == "5000"
    # LS idle: budget 1 - 0.05 = 0.95 core, but growth is capped at 10 % of 2 cores = 20000 us a round
    seen = []
    for _ in range(6):
        busy(rig, node=0.1, ls=0.0, be=0.05)
        asyncio.run(strategy.run(rig.ctx))
        seen.append(quota())
    assert seen == ["25000", "45000", "65000", "85000", "95000", "95000"]
    # switching to the cpuset policy restores the quota to unlimited in the kernel
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {"enable": True}}))
    asyncio.run(strategy.run(rig.ctx))
    assert quota() == "-1"


def test_be_cpuset_grows_by_the_cap_through_the_real_hierarchy(rig, sandbox):
    host, name = sandbox
    if online_cpus() != 2:
        pytest.skip("expected figures are for this 2-CPU machine")
    be_dirs = ["kubepods/besteffort/podbe1/cbe1", "kubepods/besteffort/podbe1", "kubepods/besteffort"]
    for relative in be_dirs:  # as a previous suppress round left it: children first
        Path(host.cgroup("cpuset", name, relative, "cpuset.cpus")).write_text("0")
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {"enable": True,
                                                                     "cpuSuppressThresholdPercent": 100}}))
    busy(rig, node=0.1, ls=0.0, be=0.0)
    asyncio.run(CPUSuppress().run(rig.ctx))  # room for 2 CPUs; +ceil(10 % of 2) = 1 a round
    for relative in be_dirs:
        assert kernel_file(host, "cpuset", name, relative, "cpuset.cpus") == "0-1"
    assert rig.metric("koordlet_be_suppress_cpu_cores", node="node-k", type="cpuset") == 2


def test_cpu_burst_writes_cfs_burst_us(rig, sandbox):
    host, name = sandbox
    if not Path(host.cgroup("cpu", name, "cpu.cfs_burst_us")).exists():
        pytest.skip("this kernel has no cpu.cfs_burst_us (CONFIG_CFS_BANDWIDTH burst, Linux >= 5.14)")
    container_dir = "kubepods/burstable/podls1/cls1"
    rig.set_slo(parse_node_slo_spec({"cpuBurstStrategy": {"policy": "cpuBurstOnly", "cpuBurstPercent": 1000}}))
    asyncio.run(CPUBurst().run(rig.ctx))
    # no quota on the container: 1 core limit * 1000 % * 100000 us
    assert kernel_file(host, "cpu", name, container_dir, "cpu.cfs_burst_us") == "1000000"
    # with a 1-core quota the kernel refuses a burst above it (EINVAL): clamped to the quota
    Path(host.cgroup("cpu", name, container_dir, "cpu.cfs_burst_us")).write_text("0")
    Path(host.cgroup("cpu", name, container_dir, "cpu.cfs_quota_us")).write_text("100000")
    rig.executor.cache.forget_where(lambda key: True)
    asyncio.run(CPUBurst().run(rig.ctx))
    assert kernel_file(host, "cpu", name, container_dir, "cpu.cfs_burst_us") == "100000"


def test_v1_be_children_with_own_quota_follow_the_tier(rig, sandbox):
    host, name = sandbox
    if online_cpus() != 2:
        pytest.skip("expected figures are for this 2-CPU machine")
    # a BE pod with a 500m batch-cpu limit: the runtime hooks gave pod and container 50000 us
    rig.states.put(pod("be1", KoordQoSClass.BE, f"{name}/kubepods/besteffort/podbe1", containers=(
        container("cbe1", "be1", f"{name}/kubepods/besteffort/podbe1/cbe1",
                  limits={"kubernetes.io/batch-cpu": 500}),)))
    for relative in ("kubepods/besteffort/podbe1", "kubepods/besteffort/podbe1/cbe1"):
        Path(host.cgroup("cpu", name, relative, "cpu.cfs_quota_us")).write_text("50000")
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 50, "cpuSuppressPolicy": "cfsQuota"}}))
    busy(rig, node=1.0, ls=0.9, be=0.05)  # budget 0.05 core: below the container's own 0.5
    strategy = CPUSuppress()
    asyncio.run(strategy.run(rig.ctx))  # the kernel refuses a tier quota under a child's: clamp them
    quota = lambda relative: kernel_file(host, "cpu", name, relative, "cpu.cfs_quota_us")  # noqa: E731
    assert [quota(r) for r in ("kubepods/besteffort", "kubepods/besteffort/podbe1",
                               "kubepods/besteffort/podbe1/cbe1")] == ["5000", "5000", "5000"]
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {"enable": False}}))
    asyncio.run(strategy.run(rig.ctx))  # restored: the tier unlimited, the pod and container their own
    assert [quota(r) for r in ("kubepods/besteffort", "kubepods/besteffort/podbe1",
                               "kubepods/besteffort/podbe1/cbe1")] == ["-1", "50000", "50000"]


def test_restore_narrows_be_cpusets_children_first_in_the_real_hierarchy(rig, sandbox):
    """An LSE pod bound to CPU 1: restoring the BE cpuset gives BE every other CPU, which
    narrows the tier. The kernel refuses a parent narrower than a child (EBUSY), so this
    passes only when the containers and pods are written before the tier."""
    host, name = sandbox
    if online_cpus() != 2:
        pytest.skip("expected figures are for this 2-CPU machine")
    rig.states.put(pod("lse1", KoordQoSClass.LSE, f"{name}/kubepods/burstable/podls1",
                       annotations={"scheduling.koordinator.sh/resource-status": '{"cpuset": "1"}'}))
    be_dirs = ["kubepods/besteffort", "kubepods/besteffort/podbe1", "kubepods/besteffort/podbe1/cbe1"]
    for relative in be_dirs:  # as the hierarchy starts: every CPU, parents first
        Path(host.cgroup("cpuset", name, relative, "cpuset.cpus")).write_text("0-1")
    busy(rig, node=0.1, ls=0.0, be=0.0)
    strategy = CPUSuppress()
    asyncio.run(strategy.run(rig.ctx))  # the default NodeSLO: suppress off, restore
    for relative in be_dirs:
        assert kernel_file(host, "cpuset", name, relative, "cpuset.cpus") == "0", relative
    assert strategy.in_force[CPUSuppressPolicy.CPUSET] is False  # restored without a refused write
