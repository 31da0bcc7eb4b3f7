"""The states informer module: CRI + kubelet polls into the store, readiness, outages."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from koordlet.apis.qos import KoordQoSClass
from koordlet.statesinformer.agent import SPEC as STATES_INFORMER
from koordlet.statesinformer.model import Source
from koordlet.statesinformer.module import StatesInformerModule
from koordlet.statesinformer.node import node_from_facts
from koordlet.statesinformer.store import PodStore
from koordlet.util.host_facts import HostFacts
from system.host import Host
from tests.koordlet.hubs_helper import config_of, hubs_for
from tests.koordlet.statesinformer.cri_server import FakeContainer, FakeRuntime, FakeSandbox, serve
from tests.koordlet.statesinformer.kubelet_server import FakeKubelet, pod_json
from tests.polling import until
from tests.system.fake_trees import build_proc_tree, build_topology_tree

UID = "0a1b2c3d-0000-4000-8000-00000000abcd"
FAST = 0.05


def _module(config, registry: CollectorRegistry | None = None, gone=None):
    hubs = hubs_for(config, registry=registry)
    if gone is not None:
        hubs.states.on_cgroup_gone = gone
    (module,) = STATES_INFORMER.build(hubs).modules
    assert hubs.states is module.store
    return module, hubs


async def test_cri_and_kubelet_feed_one_pod_and_the_module_becomes_ready(tmp_path: Path) -> None:
    runtime = FakeRuntime()
    runtime.sandboxes["sb1"] = FakeSandbox("sb1", UID, "web", "/kubepods/besteffort/pod" + UID)
    runtime.containers["c1"] = FakeContainer("c1", "sb1", "main", "/kubepods/besteffort/pod%s/c1" % UID)
    server = await serve(runtime, tmp_path / "cri.sock")
    kubelet = FakeKubelet()
    kubelet.pods = [pod_json(UID, priority=9100, qos="BestEffort")]
    await kubelet.start()
    gone: list[str] = []
    registry = CollectorRegistry()
    config = config_of(cri_endpoint="unix://%s" % (tmp_path / "cri.sock"), states_cri_sync_interval=FAST,
                    kubelet_pods_url=kubelet.url, states_kubelet_sync_interval=FAST)
    module, hubs = _module(config, registry, gone.append)
    await module.start()
    try:
        await until(module.ready)
        await until(lambda: hubs.states.pod(UID) is not None and Source.KUBELET in hubs.states.pod(UID).sources)
        pod = hubs.states.pod(UID)
        # the besteffort tier alone says BE; kubelet's priority 9100 (koord-prod) says LS
        assert (pod.priority, pod.qos.effective) == (9100, KoordQoSClass.LS)
        assert pod.containers[0].spec.requests["cpu"] == 500
        text = generate_latest(registry).decode()
        assert 'koordlet_states_informer_objects{kind="pods",source="merged"} 1.0' in text
        assert 'koordlet_states_informer_objects{kind="containers",source="cri"} 1.0' in text
        del runtime.containers["c1"]
        await until(lambda: gone == ["kubepods/besteffort/pod%s/c1" % UID])  # executor.forget_cgroup called
    finally:
        await module.stop()
        await kubelet.stop()
        await server.stop(None)


async def test_a_host_without_a_cri_socket_is_ready_with_no_pods(tmp_path: Path, capsys) -> None:
    config = config_of(cri_endpoint="unix://%s" % (tmp_path / "absent.sock"), states_cri_sync_interval=FAST)
    module, hubs = _module(config)
    await module.start()
    try:
        await until(module.ready)
        await asyncio.sleep(FAST * 4)
        assert hubs.states.pods() == ()
    finally:
        await module.stop()
    out = capsys.readouterr()
    assert (out.out + out.err).count("states_source_unreachable") == 1


async def test_a_runtime_that_refuses_is_not_ready_until_it_answers(tmp_path: Path, capsys) -> None:
    path = tmp_path / "cri.sock"
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))  # the socket file exists, nobody accepts: ECONNREFUSED
    config = config_of(cri_endpoint=str(path), states_cri_sync_interval=FAST)
    module, _ = _module(config)
    await module.start()
    try:
        await asyncio.sleep(FAST * 6)
        assert not module.ready()
        dead.close()
        path.unlink()
        server = await serve(FakeRuntime(), path)
        try:
            await until(module.ready)
        finally:
            await server.stop(None)
    finally:
        await module.stop()
    logged = capsys.readouterr()
    text = logged.out + logged.err
    assert text.count("states_source_unreachable") == 1 and text.count("states_source_reachable") == 1


async def test_without_cri_and_kubelet_the_store_waits_for_nothing() -> None:
    module, hubs = _module(config_of(cri_endpoint=""))
    await module.start()
    assert module.ready() and isinstance(hubs.states, PodStore)
    await module.stop()


def test_the_informer_is_the_first_agent() -> None:
    from koordlet.agents import AGENTS

    assert AGENTS[0] is STATES_INFORMER
    assert StatesInformerModule.name == "statesinformer"


def test_the_node_has_the_host_cpus_and_memory_as_capacity(tmp_path: Path) -> None:
    build_topology_tree(tmp_path, sockets=2, nodes_per_socket=1, cores_per_node=4, threads_per_core=2)
    host = build_proc_tree(tmp_path, meminfo="MemTotal:       1048576 kB\nMemFree: 1 kB\nMemAvailable: 1 kB\n")
    node = node_from_facts("n1", HostFacts(host))
    assert node.name == "n1"
    assert dict(node.capacity) == {"cpu": 16 * 1000, "memory": 1024 ** 3}
    assert node.allocatable == node.capacity


def test_unreadable_host_facts_leave_the_resource_out(tmp_path: Path) -> None:
    node = node_from_facts("n1", HostFacts(Host.under(tmp_path)))
    assert dict(node.capacity) == {}
