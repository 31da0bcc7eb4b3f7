"""Random and truncated bytes into a live trunk with ttrpc servers: nothing escapes, nothing hangs."""

from __future__ import annotations

import asyncio
import random
import socket
from typing import Any

from nri.mux.frame import encode_mux_frames
from nri.mux.trunk import PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN, Trunk
from nri.ttrpc.client import TtrpcClient
from nri.ttrpc.envelope import encode_request
from nri.ttrpc.frame import MessageType, encode_message
from nri.ttrpc.server import CallContext, TtrpcServer
from nri.ttrpc.status import TtrpcError
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from tests.nri.wire_fixtures import PLUGIN_SERVICE, on_both_loops


async def _configure(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
    return api.ConfigureResponse(events=1)


def _valid_request(stream_id: int) -> bytes:
    body = encode_request(PLUGIN_SERVICE, "Configure", api.ConfigureRequest().SerializeToString())
    return encode_mux_frames(1, encode_message(stream_id, MessageType.REQUEST, 0, body))


def _garbage(rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:  # pure noise
        return rng.randbytes(rng.randrange(1, 300))
    if kind == 1:  # a valid frame cut short
        frame = _valid_request(rng.randrange(1, 1000, 2))
        return frame[: rng.randrange(1, len(frame))]
    if kind == 2:  # valid mux framing around noise (ttrpc garbage on conn 1 or 2)
        return encode_mux_frames(rng.choice([1, 2, 3]), rng.randbytes(rng.randrange(0, 200)))
    if kind == 3:  # a ttrpc header announcing an oversized body, body truncated
        return encode_mux_frames(1, bytes.fromhex("7fffffff00000001" "0100") + rng.randbytes(20))
    return _valid_request(rng.randrange(1, 1000, 2))  # occasionally something good


async def _one_round(seed: int) -> None:
    rng = random.Random(seed)
    raw, other = socket.socketpair()
    raw.setblocking(False)
    trunk = await Trunk.open(other)
    handlers = {(PLUGIN_SERVICE, "Configure"): (api.ConfigureRequest, _configure)}
    servers = [
        TtrpcServer(trunk.conn(PLUGIN_SERVICE_CONN), handlers),
        TtrpcServer(trunk.conn(RUNTIME_SERVICE_CONN), handlers),
    ]
    serving = [asyncio.create_task(s.serve()) for s in servers]
    client = TtrpcClient(trunk.conn(3))  # a caller waiting while garbage arrives on its conn
    pending = asyncio.create_task(
        client.call(PLUGIN_SERVICE, "Configure", api.ConfigureRequest(), api.ConfigureResponse)
    )
    loop = asyncio.get_running_loop()
    blob = b"".join(_garbage(rng) for _ in range(rng.randrange(1, 12)))
    try:
        await asyncio.wait_for(loop.sock_sendall(raw, blob), 5)
    except (ConnectionError, OSError):
        pass  # the trunk may already have hung up: that is an allowed outcome
    drain_until = loop.time() + 0.02
    while loop.time() < drain_until:  # keep reading replies so the server never blocks
        try:
            await asyncio.wait_for(loop.sock_recv(raw, 65536), 0.005)
        except (TimeoutError, ConnectionError, OSError):
            pass
    raw.close()
    await asyncio.wait_for(trunk.closed, 5)  # peer gone: the trunk must notice
    await asyncio.wait_for(asyncio.gather(*serving), 5)  # and every server must finish
    assert all(s.in_flight == 0 for s in servers)
    try:  # the waiting caller gets an answer or an error, never a hang
        await asyncio.wait_for(pending, 5)
    except TtrpcError:
        pass


@on_both_loops
async def test_random_and_truncated_input_never_escapes_or_hangs() -> None:
    errors: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    for seed in range(60):
        await asyncio.wait_for(_one_round(seed), 10)
    assert errors == [], errors[:3]
