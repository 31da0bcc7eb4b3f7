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
from koordlet.statesinformer.nri_feed import NriFeed, SandboxChange
from koordlet.statesinformer.store import PodStore
from koordlet.util.host_facts import HostFacts
from nri.stub import Stub, StubConfig
from nri.testing.peer import RuntimePeer
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


# ---- CRI while NRI is not there

SLOW = 3600.0  # an interval no test waits out: a poll that happens was asked for


async def _cri_runtime(tmp_path: Path) -> tuple[FakeRuntime, object]:
    runtime = FakeRuntime()
    runtime.sandboxes["sb1"] = FakeSandbox("sb1", UID, "web", "/kubepods/besteffort/pod" + UID)
    runtime.containers["c1"] = FakeContainer("c1", "sb1", "main", "/kubepods/besteffort/pod%s/c1" % UID)
    return runtime, await serve(runtime, tmp_path / "cri.sock")


def _nri_and_cri(tmp_path: Path, interval: float, nri_socket: bool = False):
    nri = tmp_path / "nri.sock"
    if nri_socket:
        nri.touch()  # only its existence at start counts (sources.nri_wanted)
    config = config_of(cri_endpoint="unix://%s" % (tmp_path / "cri.sock"), states_cri_sync_interval=interval,
                       runtime_hooks_nri_socket_path=nri)
    module, hubs = _module(config)
    return module, hubs, NriFeed(hubs.states)


async def _started_with_nri_live(tmp_path: Path, interval: float):
    """The module started while NRI is connected and synchronized, once its CRI loop has had a round."""
    runtime, server = await _cri_runtime(tmp_path)
    module, hubs, feed = _nri_and_cri(tmp_path, interval)
    feed.nri_synchronized([], [])
    feed.nri_connection(True)
    await module.start()
    await until(lambda: module._cri_loop is not None and module._cri_loop.rounds >= 1)
    return runtime, server, module, hubs, feed


async def test_while_nri_is_synchronized_the_cri_poll_calls_nothing(tmp_path: Path) -> None:
    runtime, server, module, hubs, _ = await _started_with_nri_live(tmp_path, FAST)
    try:
        await until(lambda: module._cri_loop is not None and module._cri_loop.rounds >= 3)
        assert runtime.calls == [] and module._cri is None and hubs.states.pods() == ()
    finally:
        await module.stop()
        await server.stop(None)


async def test_when_nri_drops_cri_polls_at_once_and_stands_down_when_it_is_back(tmp_path: Path) -> None:
    runtime, server, module, hubs, feed = await _started_with_nri_live(tmp_path, SLOW)
    try:
        assert runtime.calls == []
        feed.nri_connection(False)  # containerd restarting
        await until(lambda: hubs.states.pod(UID) is not None)
        assert runtime.calls == ["Version", "ListPodSandbox", "ListContainers", "PodSandboxStatus", "ContainerStatus"]
        feed.nri_connection(True)
        await until(lambda: module._cri is None)
        assert hubs.states.counts()[("pods", "cri")] == 0
    finally:
        await module.stop()
        await server.stop(None)


async def test_a_node_with_nri_and_cri_sockets_is_ready_from_nri_alone(tmp_path: Path) -> None:
    runtime, server = await _cri_runtime(tmp_path)
    module, hubs, feed = _nri_and_cri(tmp_path, SLOW, nri_socket=True)
    assert hubs.states.expected == {Source.NRI}
    await module.start()
    try:
        assert not module.ready()
        feed.nri_synchronized([], [])
        feed.nri_connection(True)
        assert module.ready()
        assert module._cri_loop is not None and module._cri_loop.rounds == 0  # the first poll waits for NRI
    finally:
        await module.stop()
        await server.stop(None)
    assert runtime.calls == []


async def test_a_node_whose_nri_never_comes_is_listed_by_cri_after_one_interval(tmp_path: Path) -> None:
    runtime, server = await _cri_runtime(tmp_path)
    module, hubs, _ = _nri_and_cri(tmp_path, FAST, nri_socket=True)
    await module.start()
    try:
        await until(lambda: hubs.states.pod(UID) is not None)
        assert not module.ready()  # NRI is still waited for
    finally:
        await module.stop()
        await server.stop(None)


class _ListingPlugin:
    """An NRI plugin that only feeds the informer, as the runtime hooks' plugin does."""

    def __init__(self, feed: NriFeed) -> None:
        self._feed = feed

    def synchronize(self, pods, containers) -> list:
        self._feed.nri_synchronized(pods, containers)
        return []

    def remove_pod_sandbox(self, pod) -> None:
        self._feed.nri_pod_event(SandboxChange.REMOVE, pod)


async def test_a_runtime_restart_seen_by_the_nri_stub_has_cri_poll_until_nri_is_back(tmp_path: Path) -> None:
    runtime, server = await _cri_runtime(tmp_path)
    async with RuntimePeer(tmp_path / "nri.sock") as peer:
        module, hubs, feed = _nri_and_cri(tmp_path, SLOW)
        stub = Stub(_ListingPlugin(feed), name="informer", index="10",
                    config=StubConfig(socket_path=str(tmp_path / "nri.sock")))
        stub.add_ready_callback(feed.nri_connection)  # as the runtime hooks wire their plugin's stub
        serving = asyncio.get_running_loop().create_task(stub.run())
        await module.start()
        try:
            await until(lambda: stub.is_ready)
            assert module.ready() and runtime.calls == []
            await peer.stop()  # containerd restarting
            await until(lambda: hubs.states.pod(UID) is not None)
            await peer.start()
            await until(lambda: module._cri is None)
            assert stub.is_ready and hubs.states.pods() == ()  # NRI's listing (no pods) replaced CRI's
        finally:
            await module.stop()
            await stub.stop()
            await serving
            await server.stop(None)


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
