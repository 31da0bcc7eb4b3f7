"""The ORM daemon module: admits informer pods, releases deleted ones, restarts from the
checkpoint reconciled against live pods, and refuses a configuration it cannot use."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from koordlet.agent import StartupError
from koordlet.apis.qos import KatalystQoSLevel, KoordQoSClass, PodQoS
from koordlet.config import ConfigError
from koordlet.daemon.cli import parse_args
from koordlet.orm.manager import AdmissionError
from koordlet.orm.module import OrmModule
from koordlet.orm.options import OrmOptions
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import (
    ContainerInfo,
    ContainerState,
    LinuxResources,
    NodeInfo,
    PodInfo,
    SandboxState,
)
from koordlet.util.host_facts import HostFacts
from system.cgroup_layout import QoSTier
from system.host import Host
from tests.polling import until
from tests.system.fake_trees import build_topology_tree


def config_for(tmp: Path, *extra: str):
    return parse_args([
        "--addr", "127.0.0.1:0", "--state-dir", str(tmp / "state"),
        "--topology-policy-name", "single-numa-node", "--reserved-cpus", "0",
        "--pod-resources-server-endpoint", "unix:" + str(tmp / "pr" / "kubelet.sock"),
        "--qrm-socket-dirs", str(tmp / "qrm"), *extra])


def host_for(tmp: Path) -> Host:
    return build_topology_tree(tmp / "root", sockets=1, nodes_per_socket=1, cores_per_node=2, threads_per_core=1)


def dedicated_pod(uid: str) -> PodInfo:
    linux = LinuxResources(cpu_shares=1024, cpu_quota=100000, cpu_period=100000)
    return PodInfo(uid, "pod-" + uid, "default", "sb-" + uid, SandboxState.READY, "kubepods/pod" + uid,
                   PodQoS(KoordQoSClass.LSR, katalyst=KatalystQoSLevel.DEDICATED_CORES, k8s=QoSTier.GUARANTEED),
                   containers=(ContainerInfo("id-" + uid, "main", uid, ContainerState.CREATED, "", linux=linux),))


async def settle(module: OrmModule) -> None:
    """Until the module's admission/release tasks (checkpoint writes run in a thread) are done."""
    await until(lambda: not module._tasks)


async def test_pods_are_admitted_and_released_through_the_informer(tmp_path) -> None:
    states = StaticStates(NodeInfo("n"))
    module = OrmModule(config_for(tmp_path), HostFacts(host_for(tmp_path)), states)
    await module.start()
    try:
        states.put(dedicated_pod("a"))
        await settle(module)
        assert module.allocations.cpuset_for("a", "main") == {1}
        states.put(dedicated_pod("b"))
        await settle(module)
        assert "b" in module.orm.rejections and module.allocations.cpuset_for("b", "main") is None
        states.remove("a")
        await settle(module)
        assert module.allocations.cpuset_for("a", "main") is None
        assert module.allocations.shared_pool() == {0, 1}
    finally:
        await module.stop()


async def test_restart_keeps_running_pods_cpus_and_drops_gone_ones(tmp_path) -> None:
    states = StaticStates(NodeInfo("n"), [dedicated_pod("a")])
    first = OrmModule(config_for(tmp_path), HostFacts(host_for(tmp_path)), states)
    await first.start()
    await settle(first)
    before = first.allocations.entries()
    await first.stop()
    assert before and before[0].result == "1"

    second = OrmModule(config_for(tmp_path), HostFacts(host_for(tmp_path)), states)
    await second.start()
    assert second.allocations.entries() == before
    await second.stop()

    gone = OrmModule(config_for(tmp_path), HostFacts(host_for(tmp_path)), StaticStates(NodeInfo("n")))
    await gone.start()
    assert gone.allocations.entries() == ()
    await gone.stop()


async def test_admit_pod_is_the_nri_entry_point_and_counts_results(tmp_path) -> None:
    registry = CollectorRegistry()
    module = OrmModule(config_for(tmp_path), HostFacts(host_for(tmp_path)), None, registry)
    await module.start()
    try:
        (row,) = await module.admit_pod(dedicated_pod("n"))
        assert row.result == "1"
        with pytest.raises(AdmissionError, match="pod-m"):
            await module.admit_pod(dedicated_pod("m"))
    finally:
        await module.stop()
    value = registry.get_sample_value
    assert value("koordlet_orm_admissions_total", {"result": "admitted"}) == 1
    assert value("koordlet_orm_admissions_total", {"result": "rejected"}) == 1
    assert value("koordlet_orm_exclusive_cpus") == 1
    assert value("koordlet_orm_admission_duration_seconds_count") == 1


async def test_a_reserved_cpu_that_is_not_online_fails_start_with_exit_code_2(tmp_path) -> None:
    module = OrmModule(config_for(tmp_path, "--reserved-cpus", "7"), HostFacts(host_for(tmp_path)), None)
    with pytest.raises(StartupError, match="reserved CPUs \\[7\\] are not online") as info:
        await module.start()
    assert info.value.exit_code == 2


def test_an_unknown_policy_is_a_configuration_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="unknown topology policy 'static'"):
        parse_args(["--topology-policy-name", "static"])


def test_the_orm_is_on_only_with_a_policy_and_offers_its_ports(tmp_path) -> None:
    from koordlet.orm.agent import SPEC
    from koordlet.ports.admission import ADMIT_ALL
    from tests.koordlet.hubs_helper import hubs_for

    assert not SPEC.enabled(parse_args([]))
    config = config_for(tmp_path)
    assert SPEC.enabled(config)
    hubs = hubs_for(config, facts=HostFacts(host_for(tmp_path)))
    built = SPEC.build(hubs)
    (module,) = built.modules
    assert built.offers is not None and built.offers.admitter is module and built.offers.cpusets is module
    assert hubs.with_ports(built.offers).ports.admitter is module and hubs.ports.admitter is ADMIT_ALL
    assert "/api/v1/topology" in hubs.http.routes


@pytest.mark.parametrize("gate", ["OOBTopologyManager", "PodResourcesServer"])
def test_the_orm_gates_need_a_policy_name(gate) -> None:
    with pytest.raises(ConfigError, match="needs --topology-policy-name"):
        parse_args(["--feature-gates", gate + "=true"])
    assert parse_args(["--feature-gates", gate + "=true", "--topology-policy-name", "none"])[OrmOptions].topology_policy_name == "none"
