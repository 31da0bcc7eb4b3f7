"""The standalone evictor on cgroup v2 (cgroup.kill) and v1 (signals), and the wiring."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from koordlet.apis.qos import KoordQoSClass
from koordlet.daemon.cli import parse_args
from koordlet.qosmanager.agent import SPEC as QOS_MANAGER
from koordlet.qosmanager.agent import strategies_for
from koordlet.qosmanager.eviction import CgroupKillEvictor, EvictionReason
from koordlet.slo.agent import SPEC as NODE_SLO
from koordlet.slo.options import NodeSLOOptions
from koordlet.slo.source import NodeSLOFile, ValidatedNodeSLO
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.hubs_helper import hubs_for
from tests.koordlet.qosmanager.helpers import FedMetricStore, Rig, pod
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import add_cgroup, build_v1_tree, build_v2_tree, set_cgroup_file

NODE = NodeInfo("node-a", capacity={"cpu": 2000, "memory": 1 << 30})


def test_v2_kill_writes_cgroup_kill_once(tmp_path):
    host = build_v2_tree(tmp_path)
    for d in ("kubepods", "kubepods/besteffort", "kubepods/besteffort/podbe1"):
        add_cgroup(host, d)
    (host.cgroup("kubepods/besteffort/podbe1", "cgroup.kill")).write_text("")
    rig = Rig(host, NODE, io=FakeTreeIO())
    evictor = CgroupKillEvictor(rig.executor, rig.reader, kill=lambda pid, sig: None)
    be = pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1")
    assert asyncio.run(evictor.evict(be, EvictionReason.NODE_MEMORY_USAGE, "test"))
    assert host.cgroup("kubepods/besteffort/podbe1", "cgroup.kill").read_text() == "1"
    rig.close()


def test_v1_kill_signals_every_pid_until_empty(tmp_path):
    host = build_v1_tree(tmp_path)
    for d in ("kubepods", "kubepods/besteffort", "kubepods/besteffort/podbe1", "kubepods/besteffort/podbe1/c1"):
        add_cgroup(host, d)
    set_cgroup_file(host, "kubepods/besteffort/podbe1/c1", "cgroup.procs", "101\n102\n")
    rig = Rig(host, NODE, io=FakeTreeIO())
    sent: list[tuple[int, int]] = []

    def kill(pid: int, sig: int) -> None:
        sent.append((pid, sig))
        set_cgroup_file(host, "kubepods/besteffort/podbe1/c1", "cgroup.procs", "")  # they die

    evictor = CgroupKillEvictor(rig.executor, rig.reader, kill=kill, pause=0)
    be = pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1")
    assert asyncio.run(evictor.evict(be, EvictionReason.NODE_MEMORY_USAGE, "test"))
    assert sorted(sent) == [(101, signal.SIGKILL), (102, signal.SIGKILL)]
    rig.close()


def test_gates_choose_strategies():
    names = [s.name for s in strategies_for(parse_args(["--feature-gates=BECPUEvict=true,CPUBurst=false"]))]
    assert names == ["cpu_suppress", "cpu_evict", "memory_qos", "resctrl"]


def test_qos_manager_stays_idle_on_a_host_without_cgroups(tmp_path, capsys):
    config = parse_args(["--cgroup-root-dir", str(tmp_path / "none"), "--state-dir", str(tmp_path)])
    assert QOS_MANAGER.enabled(config)
    assert QOS_MANAGER.build(hubs_for(config)).modules == ()
    assert "qos_manager_idle" in capsys.readouterr().out
    host = build_v1_tree(tmp_path / "tree")
    with_cgroups = parse_args(["--cgroup-root-dir", str(host.cgroup_root), "--state-dir", str(tmp_path)])
    assert [m.name for m in QOS_MANAGER.build(hubs_for(with_cgroups)).modules] == ["qosmanager"]
    assert not QOS_MANAGER.enabled(parse_args(["--feature-gates", "BECPUSuppress=false,CPUBurst=false,"
                                               "CgroupReconcile=false,RdtResctrl=false"]))


def test_a_node_slo_file_is_the_hub_and_runs_as_the_nodeslo_module(tmp_path):
    slo_file = tmp_path / "slo.yaml"
    slo_file.write_text("resourceUsedThresholdWithBE: {enable: true}\n")
    host = build_v1_tree(tmp_path / "tree")
    config = parse_args(["--node-slo-config", str(slo_file), "--state-dir", str(tmp_path),
                         "--cgroup-root-dir", str(host.cgroup_root)])
    hubs = hubs_for(config, states=StaticStates(NODE), metric_cache=FedMetricStore())
    assert isinstance(hubs.node_slo, NodeSLOFile)
    assert NODE_SLO.build(hubs).modules == (hubs.node_slo,)
    (manager,) = QOS_MANAGER.build(hubs).modules
    assert manager.name == "qosmanager"
    defaults_only = hubs_for(parse_args(["--state-dir", str(tmp_path)]))
    assert NODE_SLO.build(defaults_only).modules == () and type(defaults_only.node_slo) is ValidatedNodeSLO
    assert Path(config[NodeSLOOptions].node_slo_config) == slo_file


def test_evictor_per_mode(tmp_path, monkeypatch):
    import pytest as _pytest

    from koordlet.qosmanager.api_evictor import ApiEvictor
    from koordlet.qosmanager.assembly import _evictor
    from koordlet.qosmanager.eviction import DisabledEvictor
    from koordlet.util.kube_client import KubeApi

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    host = build_v1_tree(tmp_path / "tree")
    rig = Rig(host, NODE, io=FakeTreeIO())
    standalone = parse_args([])
    assert isinstance(_evictor(standalone, KubeApi(standalone), rig.executor, rig.reader), DisabledEvictor)
    opted_in = parse_args(["--qos-standalone-eviction=true"])
    assert isinstance(_evictor(opted_in, KubeApi(opted_in), rig.executor, rig.reader), CgroupKillEvictor)
    missing = parse_args(["--kubeconfig", str(tmp_path / "absent")])
    assert isinstance(_evictor(missing, KubeApi(missing), rig.executor, rig.reader), DisabledEvictor)
    _pytest.importorskip("lightkube")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    cluster = parse_args(["--kubeconfig", str(kubeconfig)])

    async def build_and_close():
        kube = KubeApi(cluster)
        evictor = _evictor(cluster, kube, rig.executor, rig.reader)
        assert isinstance(evictor, ApiEvictor)
        assert kube.acquire() is evictor.api.client  # type: ignore[attr-defined]  # one client per daemon
        await kube.release()
        await evictor.close()
        assert kube._client is None  # closed with its last user

    asyncio.run(build_and_close())
    rig.close()
