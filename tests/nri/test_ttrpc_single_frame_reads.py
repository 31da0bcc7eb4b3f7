"""The client and server take a read holding exactly one whole message without their
frame decoder; these tests pin down that the shortcut never changes what is parsed:
every split gives the same answers, and bytes skipped after an oversized message are
never taken for a message even when they look exactly like one.
"""

from __future__ import annotations

import asyncio

import pytest

from nri.mux.trunk import PLUGIN_SERVICE_CONN
from nri.ttrpc.client import TtrpcClient
from nri.ttrpc.envelope import encode_ok_response, encode_request
from nri.ttrpc.frame import HEADER, MAX_DATA_SIZE, FrameDecoder, MessageType, encode_message
from nri.ttrpc.server import CallContext, TtrpcServer
from nri.ttrpc.status import Code, MessageTooLarge
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from proto.ttrpc import request_pb2
from tests.nri.wire_fixtures import PLUGIN_SERVICE, on_both_loops, trunk_pair

OVERSIZED = MAX_DATA_SIZE + 100


async def _configure(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
    return api.ConfigureResponse(events=len(req.runtime_name))


def _request(stream_id: int, name: str) -> bytes:
    payload = api.ConfigureRequest(runtime_name=name).SerializeToString()
    return encode_message(stream_id, MessageType.REQUEST, 0, encode_request(PLUGIN_SERVICE, "Configure", payload))


def _response(stream_id: int, events: int) -> bytes:
    body = encode_ok_response(api.ConfigureResponse(events=events).SerializeToString())
    return encode_message(stream_id, MessageType.RESPONSE, 0, body)


async def _answers(writes: list[bytes], last_stream: int) -> dict[int, request_pb2.Response]:
    """Each element of `writes` is one mux frame, so one read for the server."""
    async with trunk_pair() as (runtime, plugin):
        server = TtrpcServer(plugin.conn(PLUGIN_SERVICE_CONN), {(PLUGIN_SERVICE, "Configure"): (api.ConfigureRequest, _configure)})
        raw = runtime.conn(PLUGIN_SERVICE_CONN)
        for chunk in writes:
            raw.write(chunk)
        decoder = FrameDecoder()
        out: dict[int, request_pb2.Response] = {}
        while last_stream not in out:
            chunk = await asyncio.wait_for(raw.read(), 5)
            assert chunk, "connection closed early"
            for f in decoder.feed(chunk):
                out[f.stream_id] = request_pb2.Response.FromString(f.data)
        server.close()
        return out


@on_both_loops
async def test_requests_are_answered_alike_whole_split_or_batched() -> None:
    one, three, five = _request(1, "a"), _request(3, "bb"), _request(5, "ccc")
    writes = [one, three[:4], three[4:13], three[13:] + five[:20], five[20:]]
    replies = await _answers(writes, 5)
    events = {sid: api.ConfigureResponse.FromString(r.payload).events for sid, r in replies.items()}
    assert events == {1: 1, 3: 2, 5: 3}


@on_both_loops
async def test_server_never_takes_skipped_oversized_bytes_for_a_request() -> None:
    lookalike = _request(5, "smuggled")  # inside the oversized message's data
    before = 1000
    after = OVERSIZED - before - len(lookalike)
    writes = [
        HEADER.pack(OVERSIZED, 1, MessageType.REQUEST, 0),
        bytes(before),
        lookalike,
        bytes(after),
        _request(3, "real"),
    ]
    replies = await _answers(writes, 3)
    assert set(replies) == {1, 3}
    assert replies[1].status.code == Code.RESOURCE_EXHAUSTED
    assert replies[3].status.code == Code.OK
    assert api.ConfigureResponse.FromString(replies[3].payload).events == 4


@on_both_loops
async def test_client_never_takes_skipped_oversized_bytes_for_a_response() -> None:
    async with trunk_pair() as (runtime, plugin):
        client = TtrpcClient(runtime.conn(PLUGIN_SERVICE_CONN))
        raw = plugin.conn(PLUGIN_SERVICE_CONN)
        received = bytearray()
        raw.set_receiver(received.extend, lambda cause: None)

        def call(name: str) -> asyncio.Task[api.ConfigureResponse]:
            return asyncio.create_task(client.call(
                PLUGIN_SERVICE, "Configure", api.ConfigureRequest(runtime_name=name),
                api.ConfigureResponse, timeout=5,
            ))

        first, second = call("a"), call("b")
        while client.in_flight < 2:
            await asyncio.sleep(0.001)
        lookalike = _response(3, 99)
        before = 500
        raw.write(HEADER.pack(OVERSIZED, 1, MessageType.RESPONSE, 0))
        raw.write(bytes(before))
        raw.write(lookalike)
        raw.write(bytes(OVERSIZED - before - len(lookalike)))
        with pytest.raises(MessageTooLarge):
            await asyncio.wait_for(first, 5)
        await asyncio.sleep(0.05)
        assert not second.done()  # the look-alike inside the skipped data was not a reply
        raw.write(_response(3, 7))
        assert (await asyncio.wait_for(second, 5)).events == 7
        client.close()
