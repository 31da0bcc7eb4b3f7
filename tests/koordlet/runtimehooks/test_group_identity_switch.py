"""kernel.sched_group_identity_enabled and the GroupIdentity rule (koordlet's bvt plugin
facts: the sysctl gates bvt on newer Anolis kernels; no NodeSLO, no rule)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from koordlet.apis.qos import KoordQoSClass
from koordlet.daemon.cli import parse_args
from koordlet.runtimehooks.group_identity_switch import GroupIdentitySwitch, wanted_switch
from koordlet.runtimehooks.hooks.group_identity import qos_dir_specs
from koordlet.runtimehooks.module import RuntimeHooksModule
from koordlet.runtimehooks.slo_rules import bvt_by_tier
from koordlet.slo.source import StaticNodeSLO
from koordlet.slo.spec import parse_node_slo_spec
from koordlet.statesinformer.model import NodeInfo
from koordlet.statesinformer.nri_feed import NriFeed
from koordlet.statesinformer.store import PodStore
from koordlet.util.host_facts import HostFacts
from resourceexecutor import ResourceExecutor
from system.cgroup_layout import QoSTier
from system.host import Host
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import add_cgroup, build_topology_tree, build_v1_tree


def cpu_qos(**classes: int) -> dict:
    """NodeSLO spec with cpuQOS enabled on the named classes (lsr=2 ...), off on the others."""
    return {"resourceQOSStrategy": {f"{name}Class": {"cpuQOS": {
        "enable": name in classes, "groupIdentity": classes.get(name, 0)}} for name in ("lsr", "ls", "be")}}


@pytest.mark.parametrize("in_force, any_enabled, want", [(False, True, None), (True, True, 1), (True, False, 0)])
def test_the_switch_is_on_while_any_class_has_cpu_qos(in_force, any_enabled, want):
    assert wanted_switch(in_force, any_enabled) == want


@pytest.mark.parametrize("classes, want", [
    ({"lsr": 2, "ls": 1, "be": -1}, {QoSTier.GUARANTEED: 2, QoSTier.BURSTABLE: 1, QoSTier.BESTEFFORT: -1}),
    ({"ls": 1}, {QoSTier.GUARANTEED: 1, QoSTier.BURSTABLE: 1, QoSTier.BESTEFFORT: 0}),  # LSR off: LS's
    ({}, {QoSTier.GUARANTEED: 0, QoSTier.BURSTABLE: 0, QoSTier.BESTEFFORT: 0}),
])
def test_pods_of_no_class_take_their_kube_tiers_value(classes, want):
    assert bvt_by_tier(parse_node_slo_spec(cpu_qos(**classes))) == want


def sysctl(host: Host) -> Path:
    return host.proc("sys", "kernel", "sched_group_identity_enabled")


def test_switch_reads_then_writes_only_a_difference(tmp_path):
    host = Host.under(tmp_path)
    path = sysctl(host)
    path.parent.mkdir(parents=True)
    path.write_text("0\n")
    switch = GroupIdentitySwitch(host)
    assert switch.apply(None) and path.read_text() == "0\n"
    assert switch.apply(1) and path.read_text() == "1\n"
    before = path.stat().st_mtime_ns
    assert switch.apply(1) and path.stat().st_mtime_ns == before  # already 1: not written
    assert switch.apply(0) and path.read_text() == "0\n"


def test_a_kernel_refusing_the_switch_turns_bvt_writes_off(tmp_path):
    host = Host.under(tmp_path)
    sysctl(host).parent.mkdir(parents=True)
    sysctl(host).symlink_to("/proc/self/stat")  # a proc file that refuses writes (EINVAL)
    switch = GroupIdentitySwitch(host)
    assert not switch.apply(1)
    assert switch.apply(0)  # zeros are harmless with the switch as it is


def module_on(tmp_path: Path, slo: StaticNodeSLO, sysctl_value: str | None) -> tuple[RuntimeHooksModule, Host]:
    host = build_v1_tree(tmp_path, anolis=True)
    build_topology_tree(tmp_path, sockets=1, nodes_per_socket=1, cores_per_node=2, threads_per_core=1)
    for rel in ("kubepods", "kubepods/besteffort", "kubepods/burstable"):
        add_cgroup(host, rel)
    if sysctl_value is not None:
        sysctl(host).parent.mkdir(parents=True, exist_ok=True)
        sysctl(host).write_text(sysctl_value)
    config = parse_args(["--runtime-hooks-mode", "bypass", "--sys-root-dir", str(tmp_path / "sys"),
                         "--cgroup-root-dir", str(tmp_path / "sys" / "fs" / "cgroup")])
    facts = HostFacts(host)
    store = PodStore(NodeInfo("node"))
    module = RuntimeHooksModule(config, facts, store, NriFeed(store), ResourceExecutor(facts.files, io=FakeTreeIO()),
                                CollectorRegistry(), node_slo=slo)
    return module, host


async def test_module_sets_the_switch_from_the_node_slo_and_back(tmp_path):
    slo = StaticNodeSLO()
    module, host = module_on(tmp_path, slo, "0\n")
    await module.start()
    try:
        assert module.engine.config.bvt == {}  # no NodeSLO: no rule
        assert sysctl(host).read_text() == "0\n"
        slo.set(parse_node_slo_spec(cpu_qos(lsr=2, ls=2, be=-1)))
        assert sysctl(host).read_text() == "1\n"
        assert module.engine.config.bvt[KoordQoSClass.BE] == -1 and module.engine.config.bvt_effective
        slo.set(parse_node_slo_spec(cpu_qos()))
        assert sysctl(host).read_text() == "0\n"
    finally:
        await module.stop()


async def test_module_skips_bvt_when_the_switch_cannot_be_set(tmp_path):
    module, host = module_on(tmp_path, StaticNodeSLO(parse_node_slo_spec(cpu_qos(ls=2))), None)
    sysctl(host).parent.mkdir(parents=True, exist_ok=True)
    sysctl(host).symlink_to("/proc/self/stat")
    await module.start()
    try:
        config = module.engine.config
        assert config.host.bvt_supported and config.bvt and not config.bvt_effective
        assert all(spec.bvt is None for spec in qos_dir_specs(config).values())
    finally:
        await module.stop()
