"""End to end: the plugin stub against the runtime-side test peer over a real
unix socket. Every wait is bounded so nothing hangs."""

import asyncio

import pytest

from nri.events import Event
from nri.masks import NriVersion
from nri.stub.backoff import BackoffPolicy
from nri.stub.deadline import DeadlinePolicy, inside_handler
from nri.stub.errors import NotConnected, UpdateInsideHandler
from nri.stub.stub import Stub, StubConfig
from nri.testing.peer import PeerConfig, RuntimePeer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from tests.nri.conftest import make_container, make_pod, started

T = 5.0  # upper bound of any single wait in these tests


class ColocationPlugin:
    """Sets CPU shares by QoS annotation, records everything it sees."""

    def __init__(self):
        self.seen: list[tuple[str, str]] = []
        self.synced: tuple[int, int] | None = None
        self.update_error: Exception | None = None
        self.stub: Stub | None = None

    async def synchronize(self, pods, containers):
        self.synced = (len(pods), len(containers))
        return []

    async def run_pod_sandbox(self, pod):
        self.seen.append(("run_pod_sandbox", pod.id))

    async def create_container(self, pod, container):
        self.seen.append(("create_container", container.id))
        adjust = api.ContainerAdjustment(annotations={"colocation/seen": "true"})
        if pod.annotations.get("koordinator.sh/qosClass") == "BE":
            adjust.linux.resources.cpu.shares.value = 2
        adjust.env.add(key="QOS", value=pod.annotations.get("koordinator.sh/qosClass", ""))
        return adjust

    async def start_container(self, pod, container):
        self.seen.append(("start_container", container.id))

    async def update_container(self, pod, container, resources):
        self.seen.append(("update_container", container.id))
        update = api.ContainerUpdate(container_id=container.id)
        update.linux.resources.CopyFrom(resources)
        update.linux.resources.cpu.shares.value = max(2, resources.cpu.shares.value // 2)
        return [update]

    async def stop_container(self, pod, container):
        self.seen.append(("stop_container", container.id))
        if self.stub is not None:
            try:
                await self.stub.update_containers([])
            except UpdateInsideHandler as exc:
                self.update_error = exc
        return []

    async def remove_container(self, pod, container):
        self.seen.append(("remove_container", container.id))


def _stub(plugin, path, **cfg):
    config = StubConfig(
        socket_path=str(path),
        backoff=BackoffPolicy(initial=0.02, factor=2.0, cap=0.2),
        **cfg,
    )
    return Stub(plugin, name="colocation", index="10", config=config, environ={})


async def test_register_configure_synchronize_then_create_is_adjusted(socket_path):
    pod = make_pod(1, qos="BE")
    existing = make_container(1, pod)
    async with RuntimePeer(socket_path) as peer:
        peer.state.pods[pod.id] = pod
        peer.state.containers[existing.id] = existing
        plugin = ColocationPlugin()
        stub = _stub(plugin, socket_path)
        async with started(stub):
            (p,) = await peer.wait_plugins(1, timeout=T)
            assert p.full_name == "10-colocation" and p.nri_version == "v0.12.0"
            assert p.record.methods()[:2] == ["Configure", "Synchronize"]
            assert p.mask == stub.mask == 0x1 | 0x8 | 0x20 | 0x80 | 0x200 | 0x400
            assert plugin.synced == (1, 1)
            assert stub.runtime.nri_version == NriVersion(0, 12, 0) and stub.runtime.request_timeout == 2.0

            ctr = make_container(2, pod)
            created = await asyncio.wait_for(peer.create_container(pod, ctr), T)
            assert created.annotations["colocation/seen"] == "true"
            assert created.linux.resources.cpu.shares.value == 2
            assert "QOS=BE" in created.env
            assert peer.state.containers[ctr.id].linux.resources.cpu.shares.value == 2
            assert ("create_container", ctr.id) in plugin.seen


async def test_split_synchronize_delivers_the_whole_state_once(socket_path):
    pods = [make_pod(i) for i in range(1, 31)]
    ctrs = [make_container(i, pods[i - 1]) for i in range(1, 31)]
    async with RuntimePeer(socket_path, PeerConfig(max_sync_message=3000)) as peer:
        for pod, ctr in zip(pods, ctrs):
            peer.state.pods[pod.id] = pod
            peer.state.containers[ctr.id] = ctr
        plugin = ColocationPlugin()
        stub = _stub(plugin, socket_path)
        async with started(stub):
            (p,) = await peer.wait_plugins(1, timeout=T)
            sync_calls = [r for m, r in p.record.calls if m == "Synchronize"]
            sync_answers = [r for m, r in p.record.responses if m == "Synchronize"]
            assert len(sync_calls) > 2
            assert [c.more for c in sync_calls] == [True] * (len(sync_calls) - 1) + [False]
            assert all(a.more and not a.update for a in sync_answers[:-1])
            assert not sync_answers[-1].more
            assert plugin.synced == (30, 30)


async def test_update_container_replaces_requested_resources(socket_path):
    pod = make_pod(1)
    ctr = make_container(1, pod)
    async with RuntimePeer(socket_path) as peer:
        plugin = ColocationPlugin()
        stub = _stub(plugin, socket_path)
        async with started(stub):
            await peer.wait_plugins(1, timeout=T)
            await asyncio.wait_for(peer.create_container(pod, ctr), T)
            wanted = api.LinuxResources()
            wanted.cpu.shares.value = 4096
            wanted.memory.limit.value = 512 << 20
            updated = await asyncio.wait_for(peer.update_container(pod, ctr, wanted), T)
            assert updated.linux.resources.cpu.shares.value == 2048  # the plugin halves it
            assert updated.linux.resources.memory.limit.value == 512 << 20
            assert ("update_container", ctr.id) in plugin.seen


@pytest.mark.parametrize(
    ("peer_config", "dedicated"),
    [
        (PeerConfig(nri_version=NriVersion(0, 8, 0), runtime_version="v2.1.4"), True),
        (PeerConfig(), False),  # 0.12 runtime, plugin answers Unimplemented: runtime falls back
    ],
    ids=["nri-0.8-state-change", "nri-0.12-unimplemented-fallback"],
)
async def test_state_change_path_reaches_the_same_handlers(socket_path, peer_config, dedicated):
    pod = make_pod(1)
    ctr = make_container(1, pod)
    async with RuntimePeer(socket_path, peer_config) as peer:
        plugin = ColocationPlugin()
        stub = _stub(plugin, socket_path, dedicated_rpcs=dedicated)
        async with started(stub):
            (p,) = await peer.wait_plugins(1, timeout=T)
            await asyncio.wait_for(peer.run_pod_sandbox(pod), T)
            await asyncio.wait_for(peer.create_container(pod, ctr), T)
            await asyncio.wait_for(peer.container_event(Event.START_CONTAINER, pod, ctr), T)
            await asyncio.wait_for(peer.container_event(Event.REMOVE_CONTAINER, pod, ctr), T)
            assert plugin.seen == [
                ("run_pod_sandbox", pod.id),
                ("create_container", ctr.id),
                ("start_container", ctr.id),
                ("remove_container", ctr.id),
            ]
            methods = p.record.methods()
            assert methods.count("StateChange") == 3
            assert "CreateContainer" in methods  # always a dedicated RPC
            assert not p.is_closed


async def test_unsolicited_update_containers_is_applied_by_the_runtime(socket_path):
    pod = make_pod(1)
    ctr = make_container(1, pod)
    async with RuntimePeer(socket_path) as peer:
        peer.state.pods[pod.id] = pod
        peer.state.containers[ctr.id] = ctr
        plugin = ColocationPlugin()
        stub = _stub(plugin, socket_path)
        async with started(stub):
            (p,) = await peer.wait_plugins(1, timeout=T)
            update = api.ContainerUpdate(container_id=ctr.id)
            update.linux.resources.cpu.quota.value = 50000
            missing = api.ContainerUpdate(container_id="gone")
            missing.linux.resources.cpu.quota.value = 1
            failed = await asyncio.wait_for(stub.update_containers([update, missing]), T)
            assert [f.container_id for f in failed] == ["gone"]
            assert peer.state.containers[ctr.id].linux.resources.cpu.quota.value == 50000
            assert len(p.record.unsolicited) == 1


async def test_update_containers_inside_a_handler_is_refused_not_deadlocked(socket_path):
    pod = make_pod(1)
    ctr = make_container(1, pod)
    async with RuntimePeer(socket_path) as peer:
        plugin = ColocationPlugin()
        stub = _stub(plugin, socket_path)
        plugin.stub = stub
        async with started(stub):
            (p,) = await peer.wait_plugins(1, timeout=T)
            await asyncio.wait_for(peer.stop_container(pod, ctr), T)
            # refused at once: a deadlock would have run into the runtime's request timeout,
            # and the runtime closes a plugin that misses it
            assert isinstance(plugin.update_error, UpdateInsideHandler)
            assert not p.is_closed and p.record.unsolicited == []


async def test_peer_restart_makes_the_plugin_reconnect_and_resynchronize(socket_path):
    pod = make_pod(1)
    ctr = make_container(1, pod)
    transitions = []
    async with RuntimePeer(socket_path) as peer:
        plugin = ColocationPlugin()
        stub = _stub(plugin, socket_path)
        stub.add_ready_callback(transitions.append)
        async with started(stub):
            await peer.wait_plugins(1, timeout=T)
            peer.state.pods[pod.id] = pod
            peer.state.containers[ctr.id] = ctr
            await peer.restart(down_for=0.1)  # socket absent for a while: dial fails, backoff
            (p,) = await peer.wait_plugins(1, timeout=T)
            await asyncio.wait_for(stub.ready.wait(), T)
            assert stub.connections == 2
            assert plugin.synced == (1, 1)  # resynchronized with the new runtime's state
            assert transitions == [True, False, True]
            created = await asyncio.wait_for(peer.create_container(pod, make_container(2, pod)), T)
            assert created.annotations["colocation/seen"] == "true"
        assert not stub.is_ready


async def test_slow_handler_is_answered_by_the_deadline_guard_and_stays_connected(socket_path):
    release = asyncio.Event()

    class Slow(ColocationPlugin):
        async def create_container(self, pod, container):
            if container.name == "slow":
                await release.wait()  # slower than any deadline, until the test says
            return await super().create_container(pod, container)

    pod = make_pod(1)
    # the runtime closes a plugin that misses its request timeout: staying connected is the
    # proof the guard answered in time (a time budget in the test would race a busy machine)
    async with RuntimePeer(socket_path, PeerConfig(request_timeout=2.0)) as peer:
        plugin = Slow()
        stub = _stub(plugin, socket_path)
        async with started(stub):
            try:
                (p,) = await peer.wait_plugins(1, timeout=T)
                slow = make_container(1, pod)
                slow.name = "slow"
                created = await asyncio.wait_for(peer.create_container(pod, slow), T)
                assert "colocation/seen" not in created.annotations  # the no-op answer
                assert not p.is_closed and stub.is_ready
                fast = await asyncio.wait_for(peer.create_container(pod, make_container(2, pod)), T)
                assert fast.annotations["colocation/seen"] == "true"
                assert stub.connections == 1
            finally:
                release.set()  # before the stop: the slow handler ends on its own


async def test_a_handler_that_does_not_suspend_is_answered_without_a_task(socket_path):
    class Inline(ColocationPlugin):
        def __init__(self):
            super().__init__()
            self.where: list[tuple[str, bool, str | None]] = []  # (handler, in a task, scope)

        async def create_container(self, pod, container):
            self.where.append(("create", asyncio.current_task() is not None, inside_handler()))
            return await super().create_container(pod, container)  # which does not suspend

        def start_container(self, pod, container):  # a plain function
            self.where.append(("start", asyncio.current_task() is not None, inside_handler()))

    pod = make_pod(1)
    async with RuntimePeer(socket_path) as peer:
        plugin = Inline()
        stub = _stub(plugin, socket_path)
        async with started(stub):
            await peer.wait_plugins(1, timeout=T)
            ctr = make_container(1, pod)
            created = await asyncio.wait_for(peer.create_container(pod, ctr), T)
            await asyncio.wait_for(peer.container_event(Event.START_CONTAINER, pod, ctr), T)
            assert created.annotations["colocation/seen"] == "true"
            # the handler scope is set for the inline step and reset after it
            assert plugin.where == [("create", False, "CreateContainer"), ("start", False, None)]


async def test_without_the_guard_a_slow_handler_gets_the_plugin_dropped(socket_path):
    class Slow(ColocationPlugin):
        async def create_container(self, pod, container):
            await asyncio.sleep(1.0)

    pod = make_pod(1)
    async with RuntimePeer(socket_path, PeerConfig(request_timeout=0.3)) as peer:
        stub = _stub(Slow(), socket_path, deadline=DeadlinePolicy(enabled=False))
        async with started(stub):
            (p,) = await peer.wait_plugins(1, timeout=T)
            created = await asyncio.wait_for(peer.create_container(pod, make_container(1, pod)), T)
            assert "colocation/seen" not in created.annotations  # created without the plugin
            assert p.is_closed and "CreateContainer" in p.close_reason


async def test_nri_0_6_runtime_gets_a_mask_within_0x7ff(socket_path):
    class Everything(ColocationPlugin):
        async def validate_container_adjustment(self, req):
            return None

        async def update_pod_sandbox(self, pod, overhead, resources):
            return None

        async def post_update_pod_sandbox(self, pod):
            return None

    cfg = PeerConfig(nri_version=NriVersion(0, 6, 1), runtime_version="v1.7.20")
    async with RuntimePeer(socket_path, cfg) as peer:
        stub = _stub(Everything(), socket_path)
        async with started(stub):
            (p,) = await peer.wait_plugins(1, timeout=T)
            assert p.mask & ~0x7FF == 0 and p.mask == stub.mask
            assert peer.rejected == []
            configure = p.record.calls[0][1]
            assert configure.request_timeout == 0 and configure.NRI_version == ""  # 0.6 sends neither


async def test_update_containers_before_connecting_is_a_clear_error(socket_path):
    stub = _stub(ColocationPlugin(), socket_path)
    with pytest.raises(NotConnected):
        await stub.update_containers([])
