"""The NRI transport against the runtime-side peer, whose model applies
adjustments and updates the way containerd does."""

from __future__ import annotations

import asyncio
from pathlib import Path

from koordlet.runtimehooks.engine import HookEngine
from koordlet.runtimehooks.follow_ups import FollowUps
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.runtimehooks.hooks import HOOKS
from koordlet.runtimehooks.nri_plugin import KoordletNriPlugin
from koordlet.statesinformer.model import NodeInfo
from koordlet.statesinformer.nri_feed import NriFeed
from koordlet.statesinformer.store import PodStore
from nri.events import Event
from nri.masks import events_of
from nri.stub import Stub, StubConfig
from nri.testing import Misbehaviour, RuntimePeer
from resourceexecutor import executor_without_cgroups
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec
from tests.koordlet.runtimehooks.nri_pods import nri_container, nri_pod
from tests.nri.conftest import socket_path  # noqa: F401  (fixture)
from tests.polling import until

GiB = 1 << 30
ANNOT = "node.koordinator.sh/extended-resource-spec"
STATUS = "scheduling.koordinator.sh/resource-status"


class Harness:
    def __init__(self, peer: RuntimePeer, plugin: KoordletNriPlugin, stub: Stub, task: asyncio.Task) -> None:
        self.peer, self.plugin, self.stub, self.task = peer, plugin, stub, task


async def start(socket_path: Path, config: HookConfig, synced: list | None = None) -> Harness:
    peer = RuntimePeer(socket_path)
    await peer.start()
    store = PodStore(NodeInfo("node"))
    feed = NriFeed(store)
    engine = HookEngine(store, config, HOOKS)
    engine.start()
    plugin = KoordletNriPlugin(engine, feed, executor_without_cgroups(),
                               on_synchronized=(lambda: synced.append(1)) if synced is not None else (lambda: None))
    stub = Stub(plugin, name="koordlet_nri", index="00", config=StubConfig(socket_path=str(socket_path)))
    plugin.stub = stub
    task = await stub.start(timeout=5)
    await peer.wait_plugins(1)
    return Harness(peer, plugin, stub, task)


async def stop(h: Harness) -> None:
    await h.stub.stop()
    await asyncio.gather(h.task, return_exceptions=True)
    await h.peer.stop()


CONFIG = HookConfig(node_cpus=frozenset(range(4)))


async def test_subscribes_only_to_the_events_it_uses(socket_path) -> None:
    h = await start(socket_path, CONFIG)
    try:
        (peer_plugin,) = h.peer.plugins
        assert set(events_of(peer_plugin.mask)) == {
            Event.RUN_POD_SANDBOX, Event.REMOVE_POD_SANDBOX, Event.CREATE_CONTAINER, Event.POST_START_CONTAINER,
            Event.UPDATE_CONTAINER, Event.REMOVE_CONTAINER}
        assert (peer_plugin.name, peer_plugin.index) == ("koordlet_nri", "00")
    finally:
        await stop(h)


async def test_a_started_container_is_running_for_the_collectors(socket_path) -> None:
    """Created is not running: the collectors and CPU burst count a container from its start."""
    from koordlet.statesinformer.model import ContainerState

    h = await start(socket_path, CONFIG)
    try:
        pod = nri_pod("ls1", "LS")
        await h.peer.run_pod_sandbox(pod)
        created = await h.peer.create_container(pod, nri_container(pod, "main"))
        states = h.plugin.engine.states
        await until(lambda: states.pod("ls1") is not None and len(states.pod("ls1").containers) == 1)
        assert states.pod("ls1").running_containers == ()
        await h.peer.container_event(Event.POST_START_CONTAINER, pod, created)
        await until(lambda: [c.state for c in states.pod("ls1").containers] == [ContainerState.RUNNING])
        assert [c.name for c in states.pod("ls1").running_containers] == ["main"]
    finally:
        await stop(h)


async def test_be_pod_with_batch_resources_and_ls_pod_keep_kubelet_values(socket_path) -> None:
    h = await start(socket_path, CONFIG)
    try:
        be = nri_pod("be1", "BE", {ANNOT: ext_spec(main=batch("500", "1Gi"))})
        ls = nri_pod("ls1", "LS")
        for pod in (be, ls):
            await h.peer.run_pod_sandbox(pod)
        be_ctr = await h.peer.create_container(be, nri_container(be, "main"))
        ls_ctr = await h.peer.create_container(ls, nri_container(ls, "main", shares=512, quota=50_000, memory=GiB))
        res = be_ctr.linux.resources
        assert (res.cpu.shares.value, res.cpu.quota.value, res.memory.limit.value, res.cpu.cpus) == (
            512, 50_000, GiB, "0-3")
        res = ls_ctr.linux.resources
        assert (res.cpu.shares.value, res.cpu.quota.value, res.memory.limit.value, res.cpu.cpus) == (
            512, 50_000, GiB, "0-3")  # kubelet's values kept; only the cpuset is ours
    finally:
        await stop(h)


async def test_lsr_binding_updates_running_containers_unsolicited(socket_path) -> None:
    h = await start(socket_path, CONFIG)
    try:
        ls = nri_pod("ls1", "LS")
        await h.peer.run_pod_sandbox(ls)
        created = await h.peer.create_container(ls, nri_container(ls, "main"))
        assert created.linux.resources.cpu.cpus == "0-3"
        lsr = nri_pod("lsr1", "LSR", {STATUS: '{"cpuset": "2-3"}'})
        await h.peer.run_pod_sandbox(lsr)
        lsr_ctr = await h.peer.create_container(lsr, nri_container(lsr, "main"))
        assert lsr_ctr.linux.resources.cpu.cpus == "2-3"
        await until(lambda: h.peer.state.containers[created.id].linux.resources.cpu.cpus == "0-1")
        assert h.peer.plugins[0].record.unsolicited  # it came as UpdateContainers, not with an event
    finally:
        await stop(h)


async def test_update_container_reasserts_owned_fields(socket_path) -> None:
    h = await start(socket_path, CONFIG)
    try:
        be = nri_pod("be1", "BE", {ANNOT: ext_spec(main=batch("1000", "2Gi"))})
        await h.peer.run_pod_sandbox(be)
        created = await h.peer.create_container(be, nri_container(be, "main"))
        asked = created.linux.resources.__class__()
        asked.cpu.shares.value = 2
        asked.memory.limit.value = 4 * GiB
        updated = await h.peer.update_container(be, created, asked)
        assert (updated.linux.resources.cpu.shares.value, updated.linux.resources.memory.limit.value) == (1024, 2 * GiB)
    finally:
        await stop(h)


async def test_synchronize_shapes_containers_created_while_away(socket_path) -> None:
    peer = RuntimePeer(socket_path)
    be = nri_pod("be1", "BE", {ANNOT: ext_spec(main=batch("250", "1Gi"))})
    ctr = nri_container(be, "main")
    peer.state.pods[be.id] = be
    peer.state.containers[ctr.id] = ctr
    await peer.stop()
    synced: list = []
    h = await start(socket_path, CONFIG, synced)
    try:
        h.peer.state.pods[be.id] = be
        h.peer.state.containers[ctr.id] = ctr
        await h.peer.restart()  # the runtime comes back holding a container we never adjusted
        await h.peer.wait_plugins(1)
        for _ in range(200):
            if h.peer.state.containers[ctr.id].linux.resources.cpu.shares.value == 256:
                break
            await asyncio.sleep(0.01)
        res = h.peer.state.containers[ctr.id].linux.resources
        assert (res.cpu.shares.value, res.cpu.quota.value, res.memory.limit.value) == (256, 25_000, GiB)
        assert len(synced) >= 2
    finally:
        await stop(h)


async def test_container_of_an_unseen_sandbox_is_decided_after_feeding(socket_path) -> None:
    h = await start(socket_path, CONFIG)
    try:
        be = nri_pod("be9", "BE", {ANNOT: ext_spec(main=batch("500", "1Gi"))})
        created = await h.peer.create_container(be, nri_container(be, "main"))  # no RunPodSandbox first
        assert created.linux.resources.cpu.shares.value == 512
        info = h.plugin.engine.states.pod("be9")
        assert info is not None and info.container_by_id(created.id) is not None
    finally:
        await stop(h)


async def test_created_container_reaches_the_informer_soon_after_the_answer(socket_path) -> None:
    """No further event needed: the informer hears of it once the loop has slept."""
    h = await start(socket_path, CONFIG)
    try:
        ls = nri_pod("ls2", "LS")
        await h.peer.run_pod_sandbox(ls)
        created = await h.peer.create_container(ls, nri_container(ls, "main"))
        await until(lambda: h.plugin.engine.states.pod("ls2").container_by_id(created.id) is not None)
    finally:
        await stop(h)


async def test_the_next_event_sees_the_informer_fed_in_the_runtime_s_order(socket_path) -> None:
    """The informer's feed waits after CreateContainer's answer, but never past the next
    event: a RemoveContainer right after it leaves no container behind."""
    h = await start(socket_path, CONFIG)
    h.plugin.follow_ups = FollowUps(delay=3600.0)  # only an event runs them here
    try:
        ls = nri_pod("ls1", "LS")
        await h.peer.run_pod_sandbox(ls)
        created = await h.peer.create_container(ls, nri_container(ls, "main"))
        assert h.plugin.engine.states.pod("ls1").container_by_id(created.id) is None  # the answer went first
        await h.peer.container_event(Event.REMOVE_CONTAINER, ls, created)
        h.plugin.follow_ups.run()  # nothing left that could bring it back
        assert h.plugin.engine.states.pod("ls1").container_by_id(created.id) is None
        assert created.id not in h.plugin._sent
    finally:
        await stop(h)


async def test_unsolicited_updates_go_in_bounded_requests_in_order(socket_path, monkeypatch) -> None:
    """Many running containers to update: several UpdateContainers of at most
    UPDATES_PER_CALL each, every container once, in the informer's pod order."""
    from koordlet.runtimehooks import nri_plugin

    monkeypatch.setattr(nri_plugin, "UPDATES_PER_CALL", 2)
    h = await start(socket_path, CONFIG)
    try:
        created = []
        for i in range(5):
            ls = nri_pod("ls%d" % i, "LS")
            await h.peer.run_pod_sandbox(ls)
            created.append((await h.peer.create_container(ls, nri_container(ls, "main"))).id)
        lsr = nri_pod("lsr1", "LSR", {STATUS: '{"cpuset": "2-3"}'})
        await h.peer.run_pod_sandbox(lsr)
        await h.peer.create_container(lsr, nri_container(lsr, "main"))
        containers = h.peer.state.containers
        await until(lambda: all(containers[c].linux.resources.cpu.cpus == "0-1" for c in created))
        requests = h.peer.plugins[0].record.unsolicited
        sent = [u.container_id for r in requests for u in r.update]
        assert all(len(r.update) <= 2 for r in requests) and len(requests) >= 3
        assert sent == created  # each once, pods in the order the informer holds them
    finally:
        await stop(h)


async def test_a_change_while_updates_are_on_their_way_is_sent_too(socket_path) -> None:
    """A second binding that lands while the first flush waits on the runtime is not lost:
    the running flush picks it up when its requests are answered."""
    h = await start(socket_path, CONFIG)
    try:
        ls = nri_pod("ls1", "LS")
        await h.peer.run_pod_sandbox(ls)
        created = await h.peer.create_container(ls, nri_container(ls, "main"))
        h.peer.misbehaviour = Misbehaviour(update_reply_delay=0.3)
        first = nri_pod("lsr1", "LSR", {STATUS: '{"cpuset": "3"}'})
        await h.peer.run_pod_sandbox(first)
        await h.peer.create_container(first, nri_container(first, "main"))
        await until(lambda: len(h.peer.plugins[0].record.unsolicited) == 1)  # the first flush is waiting
        second = nri_pod("lsr2", "LSR", {STATUS: '{"cpuset": "2"}'})
        await h.peer.run_pod_sandbox(second)
        await h.peer.create_container(second, nri_container(second, "main"))
        await until(lambda: h.peer.state.containers[created.id].linux.resources.cpu.cpus == "0-1")
    finally:
        await stop(h)
