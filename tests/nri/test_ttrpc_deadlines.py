"""Server-side deadlines (Request.timeout_nano), seen on the wire with no client timer.

The server shares one loop timer between all running calls; these tests pin down that
every call still gets the answer its own timeout would have produced.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from nri.mux.trunk import PLUGIN_SERVICE_CONN
from nri.ttrpc.envelope import encode_request
from nri.ttrpc.frame import FrameDecoder, MessageType, encode_message
from nri.ttrpc.server import CallContext, Handler, TtrpcServer
from nri.ttrpc.status import Code, TtrpcError
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from proto.ttrpc import request_pb2
from tests.nri.wire_fixtures import PLUGIN_SERVICE, on_both_loops, rpc_pair, trunk_pair, wait_until

MS = 1_000_000  # timeout_nano per millisecond


def _request(stream_id: int, runtime_name: str, timeout_nano: int) -> bytes:
    payload = api.ConfigureRequest(runtime_name=runtime_name).SerializeToString()
    body = encode_request(PLUGIN_SERVICE, "Configure", payload, timeout_nano)
    return encode_message(stream_id, MessageType.REQUEST, 0, body)


async def _exchange(
    handlers: Mapping[tuple[str, str], Handler], frames: bytes, expect: int
) -> tuple[dict[int, request_pb2.Response], TtrpcServer]:
    """Send raw requests (the server's deadlines are the only timers); collect answers."""
    async with trunk_pair() as (runtime, plugin):
        server = TtrpcServer(plugin.conn(PLUGIN_SERVICE_CONN), handlers)
        raw = runtime.conn(PLUGIN_SERVICE_CONN)
        raw.write(frames)
        decoder = FrameDecoder()
        out: dict[int, request_pb2.Response] = {}
        while len(out) < expect:
            chunk = await asyncio.wait_for(raw.read(), 5)
            assert chunk, "connection closed early"
            for f in decoder.feed(chunk):
                assert f.type == MessageType.RESPONSE
                out[f.stream_id] = request_pb2.Response.FromString(f.data)
        await wait_until(lambda: server.in_flight == 0)
        server.close()
        return out, server


def _configure_table(fn: object) -> dict[tuple[str, str], Handler]:
    return {(PLUGIN_SERVICE, "Configure"): (api.ConfigureRequest, fn)}  # type: ignore[dict-item]


def _events(resp: request_pb2.Response) -> int:
    return api.ConfigureResponse.FromString(resp.payload).events


@on_both_loops
async def test_a_suspended_handler_past_its_deadline_is_cancelled_and_answered_deadline_exceeded() -> None:
    cancelled: list[int] = []

    async def slow(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(ctx.stream_id)
            raise
        return api.ConfigureResponse(events=1)

    replies, _ = await _exchange(_configure_table(slow), _request(1, "a", 50 * MS), 1)
    assert (replies[1].status.code, replies[1].status.message) == (
        Code.DEADLINE_EXCEEDED, "context deadline exceeded"
    )
    assert cancelled == [1]


@on_both_loops
async def test_handlers_with_and_without_suspending_all_get_their_own_answer() -> None:
    async def mixed(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        if req.runtime_name == "sync":
            return api.ConfigureResponse(events=1)
        await asyncio.sleep(0.01)
        return api.ConfigureResponse(events=2)

    frames = (
        _request(1, "sync", 1000 * MS) + _request(3, "suspends", 1000 * MS)
        + _request(5, "sync", 0) + _request(7, "suspends", 0)
    )
    replies, server = await _exchange(_configure_table(mixed), frames, 4)
    assert {sid: (r.status.code, _events(r)) for sid, r in replies.items()} == {
        1: (Code.OK, 1), 3: (Code.OK, 2), 5: (Code.OK, 1), 7: (Code.OK, 2)
    }
    assert server.in_flight == 0


@on_both_loops
async def test_deadlines_of_concurrent_calls_expire_independently_in_any_arrival_order() -> None:
    # Arrival order: long, short, medium, none. The shared timer must be re-armed for an
    # earlier deadline that arrives later and keep going after the first expiry.
    release = asyncio.Event()

    async def waits(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        if req.runtime_name == "until-released":
            await release.wait()
            return api.ConfigureResponse(events=9)
        await asyncio.sleep(30)
        return api.ConfigureResponse(events=1)

    async def release_later() -> None:
        await asyncio.sleep(0.4)
        release.set()

    frames = (
        _request(1, "until-released", 3000 * MS) + _request(3, "sleeps", 60 * MS)
        + _request(5, "sleeps", 150 * MS) + _request(7, "until-released", 0)
    )
    releaser = asyncio.create_task(release_later())
    replies, server = await _exchange(_configure_table(waits), frames, 4)
    await releaser
    assert replies[3].status.code == Code.DEADLINE_EXCEEDED
    assert replies[5].status.code == Code.DEADLINE_EXCEEDED
    assert (replies[1].status.code, _events(replies[1])) == (Code.OK, 9)
    assert (replies[7].status.code, _events(replies[7])) == (Code.OK, 9)
    assert server.in_flight == 0


@on_both_loops
async def test_a_deadline_already_past_on_arrival_spares_a_handler_that_does_not_suspend() -> None:
    # As with a timeout context: the handler's first step runs, and only a handler that
    # is still running when the (already due) timer fires gets DEADLINE_EXCEEDED.
    async def maybe_waits(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        if req.runtime_name == "suspends":
            await asyncio.sleep(1)
        return api.ConfigureResponse(events=3)

    frames = _request(1, "sync", 1) + _request(3, "suspends", 1)
    replies, _ = await _exchange(_configure_table(maybe_waits), frames, 2)
    assert (replies[1].status.code, _events(replies[1])) == (Code.OK, 3)
    assert replies[3].status.code == Code.DEADLINE_EXCEEDED


@on_both_loops
async def test_a_handler_that_absorbs_its_deadline_cancellation_and_answers_is_answered() -> None:
    async def stubborn(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return api.ConfigureResponse(events=7)
        return api.ConfigureResponse(events=1)

    replies, _ = await _exchange(_configure_table(stubborn), _request(1, "x", 30 * MS), 1)
    assert (replies[1].status.code, _events(replies[1])) == (Code.OK, 7)


@on_both_loops
async def test_a_handler_that_turns_its_deadline_into_another_error_gets_that_status() -> None:
    async def converts(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise FileNotFoundError("cgroup gone") from None
        return api.ConfigureResponse(events=1)

    replies, _ = await _exchange(_configure_table(converts), _request(1, "x", 30 * MS), 1)
    assert (replies[1].status.code, replies[1].status.message) == (Code.NOT_FOUND, "cgroup gone")


@on_both_loops
async def test_handlers_run_in_their_own_task_so_timeout_and_task_groups_work() -> None:
    tasks: list[asyncio.Task[object] | None] = []

    async def structured(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        tasks.append(asyncio.current_task())
        async with asyncio.timeout(5):
            async with asyncio.TaskGroup() as group:
                child = group.create_task(asyncio.sleep(0, result=4))
        return api.ConfigureResponse(events=child.result())

    frames = _request(1, "x", 1000 * MS) + _request(3, "y", 0)
    replies, _ = await _exchange(_configure_table(structured), frames, 2)
    assert {sid: (r.status.code, _events(r)) for sid, r in replies.items()} == {
        1: (Code.OK, 4), 3: (Code.OK, 4)
    }
    assert len(tasks) == 2 and None not in tasks and tasks[0] is not tasks[1]


@on_both_loops
async def test_client_timeouts_of_concurrent_calls_expire_independently() -> None:
    # The client shares one timer too: a shorter timeout issued after a longer one must
    # still fire on time, and calls answered in time are not disturbed by it.
    release = asyncio.Event()

    async def gated(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        if req.runtime_name == "gated":
            await release.wait()
        return api.ConfigureResponse(events=len(req.runtime_name))

    async with rpc_pair(_configure_table(gated)) as p:
        loop = asyncio.get_running_loop()

        async def call(name: str, timeout: float | None) -> tuple[str, object, float]:
            started = loop.time()
            try:
                resp = await p.client.call(
                    PLUGIN_SERVICE, "Configure", api.ConfigureRequest(runtime_name=name),
                    api.ConfigureResponse, timeout=timeout,
                )
                outcome: object = resp.events
            except TtrpcError as err:
                outcome = err.code
            return name, outcome, loop.time() - started

        long = asyncio.create_task(call("gated", 3.0))
        short = asyncio.create_task(call("gated", 0.1))
        untimed = asyncio.create_task(call("gated", None))
        quick = await call("quick", 0.05)
        assert quick[:2] == ("quick", 5)
        short_result = await asyncio.wait_for(short, 5)
        assert short_result[1] == Code.DEADLINE_EXCEEDED and 0.09 <= short_result[2] < 2.0
        release.set()
        assert (await asyncio.wait_for(long, 5))[1] == 5
        assert (await asyncio.wait_for(untimed, 5))[1] == 5
        assert p.client.in_flight == 0
