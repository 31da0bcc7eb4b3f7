"""The test peer enforces what a runtime enforces, and can misbehave; the stub
must survive it. Raw plugins are built from the ttrpc layer directly."""

import asyncio
import socket
import struct
from dataclasses import replace

import pytest

from nri.events import PLUGIN_SERVICE, RUNTIME_SERVICE
from nri.masks import NriVersion
from nri.mux.trunk import PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN
from nri.stub.backoff import BackoffPolicy
from nri.stub.stub import Stub, StubConfig
from nri.testing.peer import Misbehaviour, PeerConfig, RuntimePeer
from nri.transport import dial
from nri.ttrpc.client import TtrpcClient
from nri.ttrpc.server import TtrpcServer
from nri.ttrpc.status import Code, TtrpcError
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from tests.nri.conftest import make_container, make_pod, started

T = 5.0


class Minimal:
    def __init__(self):
        self.created = 0

    async def create_container(self, pod, ctr):
        self.created += 1
        return api.ContainerAdjustment(annotations={"minimal": "1"})


def _stub(plugin, path, name="minimal", index="20"):
    cfg = StubConfig(socket_path=str(path), backoff=BackoffPolicy(initial=0.02, factor=2.0, cap=0.2))
    return Stub(plugin, name=name, index=index, config=cfg, environ={})


class RawPlugin:
    """A hand-driven plugin: register with anything, answer with anything."""

    def __init__(self, handlers):
        self.handlers = handlers

    async def connect(self, path):
        self.trunk = await dial(str(path))
        self.server = TtrpcServer(
            self.trunk.conn(PLUGIN_SERVICE_CONN), {(PLUGIN_SERVICE, m): h for m, h in self.handlers.items()}
        )
        self.client = TtrpcClient(self.trunk.conn(RUNTIME_SERVICE_CONN))
        return self

    async def register(self, name="raw", idx="50"):
        req = api.RegisterPluginRequest(plugin_name=name, plugin_idx=idx)
        return await self.client.call(RUNTIME_SERVICE, "RegisterPlugin", req, api.Empty, timeout=T)

    def close(self):
        self.trunk.close("test done")


def _configure(events):
    async def on_configure(req, ctx):
        return api.ConfigureResponse(events=events)

    return (api.ConfigureRequest, on_configure)


def _sync(answer):
    async def on_sync(req, ctx):
        return answer(req)

    return (api.SynchronizeRequest, on_sync)


async def test_silent_plugin_is_closed_at_the_registration_timeout_and_the_next_one_waits(socket_path):
    async with RuntimePeer(socket_path, PeerConfig(registration_timeout=0.3)) as peer:
        silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        silent.connect(str(socket_path))
        try:
            stub = _stub(Minimal(), socket_path)
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            task = await stub.start(timeout=T)
            assert loop.time() - t0 >= 0.25  # set up only after the silent one timed out
            assert peer.rejected == [("?", "plugin registration timed out")]
            silent.settimeout(T)
            assert silent.recv(10) == b""  # the runtime closed it
            await stub.stop()
            await asyncio.wait_for(task, T)
        finally:
            silent.close()


@pytest.mark.parametrize(
    ("version", "name", "idx", "accepted"),
    [
        (NriVersion(0, 12, 0), "raw", "5", False),
        (NriVersion(0, 12, 0), "raw", "050", False),
        (NriVersion(0, 12, 0), "", "50", False),
        (NriVersion(0, 12, 0), "bad name", "50", False),
        (NriVersion(0, 8, 0), "bad name", "50", True),  # charset checked from 0.12 only
        (NriVersion(0, 12, 0), "ok_name-1.2+x", "50", True),
    ],
)
async def test_registration_is_validated_per_nri_version(socket_path, version, name, idx, accepted):
    async with RuntimePeer(socket_path, PeerConfig(nri_version=version)) as peer:
        raw = await RawPlugin({"Configure": _configure(0x8)}).connect(socket_path)
        try:
            if accepted:
                await raw.register(name, idx)
            else:
                with pytest.raises(TtrpcError) as info:
                    await raw.register(name, idx)
                assert info.value.code == Code.INVALID_ARGUMENT
                await asyncio.wait_for(raw.trunk.closed, T)
                assert peer.rejected and peer.rejected[0][1].startswith("registration failed")
        finally:
            raw.close()


async def test_mask_with_bits_the_runtime_does_not_know_gets_the_plugin_closed(socket_path):
    cfg = PeerConfig(nri_version=NriVersion(0, 8, 0), runtime_version="v2.1.4")
    async with RuntimePeer(socket_path, cfg) as peer:
        raw = await RawPlugin({"Configure": _configure(0x800 | 0x8)}).connect(socket_path)
        try:
            await raw.register()
            await asyncio.wait_for(raw.trunk.closed, T)
            assert peer.rejected == [("50-raw", "invalid plugin events: 0x800")]
        finally:
            raw.close()


async def test_split_sync_answered_wrongly_gets_the_plugin_closed(socket_path):
    async with RuntimePeer(socket_path, PeerConfig(max_sync_message=2000)) as peer:
        for i in range(1, 21):
            pod = make_pod(i)
            peer.state.pods[pod.id] = pod
            ctr = make_container(i, pod)
            peer.state.containers[ctr.id] = ctr
        raw = await RawPlugin(
            {"Configure": _configure(0x8), "Synchronize": _sync(lambda req: api.SynchronizeResponse(more=False))}
        ).connect(socket_path)
        try:
            await raw.register()
            await asyncio.wait_for(raw.trunk.closed, T)
            assert peer.rejected == [("50-raw", "plugin does not handle split sync requests")]
        finally:
            raw.close()


async def test_refused_registration_is_retried_with_backoff_until_accepted(socket_path):
    async with RuntimePeer(socket_path) as peer:
        peer.misbehaviour = Misbehaviour(refuse_registration="not today")
        stub = _stub(Minimal(), socket_path)
        task = asyncio.get_running_loop().create_task(stub.run())
        try:
            async def refused_twice():
                while len(peer.rejected) < 2:
                    await asyncio.sleep(0.01)

            await asyncio.wait_for(refused_twice(), T)
            assert not stub.is_ready
            peer.misbehaviour = Misbehaviour()
            await asyncio.wait_for(stub.ready.wait(), T)
            assert stub.connections == 1
        finally:
            await stub.stop()
            await asyncio.wait_for(task, T)


async def test_dropped_connection_and_mux_garbage_both_lead_to_a_resync(socket_path):
    pod = make_pod(1)
    async with RuntimePeer(socket_path) as peer:
        plugin = Minimal()
        stub = _stub(plugin, socket_path)
        async with started(stub):
            (p,) = await peer.wait_plugins(1, timeout=T)
            p.close("dropped on purpose")
            await _wait_connections(stub, 2)
            (p,) = await peer.wait_plugins(1, timeout=T)
            # a mux frame on connection 1 announcing 1 GiB: the plugin must drop the trunk
            p.send_raw(struct.pack(">II", 1, 1 << 30))
            await _wait_connections(stub, 3)
            (p,) = await peer.wait_plugins(1, timeout=T)
            created = await asyncio.wait_for(peer.create_container(pod, make_container(1, pod)), T)
            assert created.annotations["minimal"] == "1"


async def test_ttrpc_garbage_inside_a_valid_mux_frame_is_answered_and_survived(socket_path):
    pod = make_pod(1)
    async with RuntimePeer(socket_path) as peer:
        stub = _stub(Minimal(), socket_path)
        async with started(stub):
            (p,) = await peer.wait_plugins(1, timeout=T)
            # a ttrpc Request on an even stream id, then one whose envelope is not protobuf
            bogus = struct.pack(">IIBB", 3, 2, 1, 0) + b"\xff\xff\xff"
            p.send_raw(struct.pack(">II", 1, len(bogus)) + bogus)
            # the create below follows the garbage on the same connection: read after it
            created = await asyncio.wait_for(peer.create_container(pod, make_container(1, pod)), T)
            assert created.annotations["minimal"] == "1"
            assert stub.connections == 1 and not p.is_closed


async def test_slow_runtime_registration_reply_is_waited_for(socket_path):
    async with RuntimePeer(socket_path) as peer:
        peer.misbehaviour = replace(peer.misbehaviour, register_reply_delay=0.3)
        stub = _stub(Minimal(), socket_path)
        async with started(stub):
            assert stub.connections == 1


async def _wait_connections(stub, n):
    async def reached():
        while stub.connections < n or not stub.is_ready:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(reached(), T)
