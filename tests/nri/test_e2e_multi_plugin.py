"""Several plugins on one runtime: index order, ownership conflicts, validators,
handler errors that fail the operation but keep the plugin."""

import asyncio

import pytest

from nri.stub import AdjustmentRejected, BackoffPolicy, Stub, StubConfig
from nri.testing import Misbehaviour, RuntimeOperationFailed, RuntimePeer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from tests.nri.conftest import make_container, make_pod

T = 5.0


class SetShares:
    def __init__(self, shares, log, tag):
        self.shares, self.log, self.tag = shares, log, tag

    async def create_container(self, pod, ctr):
        self.log.append(self.tag)
        if self.shares is None:
            return None
        adjust = api.ContainerAdjustment()
        adjust.linux.resources.cpu.shares.value = self.shares
        return adjust


class Failing:
    async def create_container(self, pod, ctr):
        if ctr.name == "bad":
            raise ValueError("refusing " + ctr.name)
        return api.ContainerAdjustment(annotations={"ok": "1"})


class Validator:
    async def validate_container_adjustment(self, req):
        if req.container.name == "forbidden":
            raise AdjustmentRejected("name not allowed")


def _stub(plugin, path, name, index, **cfg):
    config = StubConfig(socket_path=str(path), backoff=BackoffPolicy(initial=0.02, factor=2.0, cap=0.2), **cfg)
    return Stub(plugin, name=name, index=index, config=config, environ={})


async def _run_all(stubs):
    tasks = [await s.start(timeout=T) for s in stubs]
    return tasks


async def _stop_all(stubs, tasks):
    for s in stubs:
        await s.stop()
    await asyncio.wait_for(asyncio.gather(*tasks), T)


async def test_plugins_are_called_in_index_order_and_conflicts_fail_creation(socket_path):
    pod = make_pod(1)
    order: list[str] = []
    async with RuntimePeer(socket_path) as peer:
        stubs = [
            _stub(SetShares(None, order, "b"), socket_path, "b", "20"),
            _stub(SetShares(512, order, "a"), socket_path, "a", "10"),
        ]
        tasks = await _run_all(stubs)
        try:
            await peer.wait_plugins(2, timeout=T)
            created = await asyncio.wait_for(peer.create_container(pod, make_container(1, pod)), T)
            assert order == ["a", "b"] and created.linux.resources.cpu.shares.value == 512
            third = _stub(SetShares(2, order, "c"), socket_path, "c", "30")
            tasks.append(await third.start(timeout=T))
            stubs.append(third)
            await peer.wait_plugins(3, timeout=T)
            with pytest.raises(RuntimeOperationFailed, match='"10-a" and "30-c" both tried to set CPUShares'):
                await asyncio.wait_for(peer.create_container(pod, make_container(2, pod)), T)
            assert len(peer.plugins) == 3  # a conflict is not a reason to drop anyone
        finally:
            await _stop_all(stubs, tasks)


async def test_handler_error_fails_the_operation_and_keeps_the_plugin(socket_path):
    pod = make_pod(1)
    async with RuntimePeer(socket_path) as peer:
        stub = _stub(Failing(), socket_path, "failing", "10")
        task = await stub.start(timeout=T)
        try:
            bad = make_container(1, pod)
            bad.name = "bad"
            with pytest.raises(RuntimeOperationFailed, match="refusing bad"):
                await asyncio.wait_for(peer.create_container(pod, bad), T)
            assert bad.id not in peer.state.containers
            good = await asyncio.wait_for(peer.create_container(pod, make_container(2, pod)), T)
            assert good.annotations["ok"] == "1" and stub.connections == 1
        finally:
            await _stop_all([stub], [task])


async def test_validator_rejection_fails_creation(socket_path):
    pod = make_pod(1)
    async with RuntimePeer(socket_path) as peer:
        stubs = [_stub(SetShares(2, [], "a"), socket_path, "a", "10"), _stub(Validator(), socket_path, "v", "90")]
        tasks = await _run_all(stubs)
        try:
            (_, v) = await peer.wait_plugins(2, timeout=T)
            assert v.mask == 0x2000
            ok = await asyncio.wait_for(peer.create_container(pod, make_container(1, pod)), T)
            assert ok.linux.resources.cpu.shares.value == 2
            forbidden = make_container(2, pod)
            forbidden.name = "forbidden"
            with pytest.raises(RuntimeOperationFailed, match="name not allowed"):
                await asyncio.wait_for(peer.create_container(pod, forbidden), T)
            validate = [r for m, r in v.record.calls if m == "ValidateContainerAdjustment"][-1]
            assert [p.name for p in validate.plugins] == ["a", "v"]
        finally:
            await _stop_all(stubs, tasks)


async def test_runtime_that_never_configures_is_abandoned_after_the_setup_timeout(socket_path):
    async with RuntimePeer(socket_path) as peer:
        peer.misbehaviour = Misbehaviour(configure_delay=10.0)
        stub = _stub(SetShares(2, [], "a"), socket_path, "a", "10", setup_timeout=0.2)
        task = asyncio.get_running_loop().create_task(stub.run())
        try:
            async def two_attempts():
                while peer.accepted < 2:
                    await asyncio.sleep(0.01)

            await asyncio.wait_for(two_attempts(), T)
            assert not stub.is_ready
            peer.misbehaviour = Misbehaviour()
            await asyncio.wait_for(stub.ready.wait(), T)
        finally:
            await _stop_all([stub], [task])
