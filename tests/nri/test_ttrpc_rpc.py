"""ttrpc client <-> server over a real socketpair through two Trunks (conn 1)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from nri.mux.trunk import PLUGIN_SERVICE_CONN
from nri.ttrpc.envelope import encode_request
from nri.ttrpc.frame import HEADER, MAX_DATA_SIZE, FrameDecoder, MessageType, encode_message
from nri.ttrpc.server import CallContext, Handler, TtrpcServer
from nri.ttrpc.status import Code, ConnectionClosed, MessageTooLarge, TtrpcError
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from proto.ttrpc import request_pb2
from tests.nri.wire_fixtures import PLUGIN_SERVICE, on_both_loops, rpc_pair, trunk_pair, wait_until


async def _configure(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
    return api.ConfigureResponse(events=len(req.runtime_name))


CONFIGURE = {(PLUGIN_SERVICE, "Configure"): (api.ConfigureRequest, _configure)}


@on_both_loops
async def test_concurrent_calls_are_answered_out_of_order() -> None:
    gates = {name: asyncio.Event() for name in ("a", "bb", "ccc")}
    seen_ids: list[int] = []

    async def configure(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        seen_ids.append(ctx.stream_id)
        await gates[req.runtime_name].wait()
        return api.ConfigureResponse(events=len(req.runtime_name))

    async with rpc_pair({(PLUGIN_SERVICE, "Configure"): (api.ConfigureRequest, configure)}) as p:
        finished: list[str] = []

        async def call(name: str) -> int:
            resp = await p.client.call(
                PLUGIN_SERVICE, "Configure", api.ConfigureRequest(runtime_name=name),
                api.ConfigureResponse, timeout=5,
            )
            finished.append(name)
            return resp.events

        tasks = [asyncio.create_task(call(n)) for n in ("a", "bb", "ccc")]
        await wait_until(lambda: len(seen_ids) == 3)
        for name in ("ccc", "a", "bb"):
            gates[name].set()
            await wait_until(lambda name=name: name in finished)
        assert await asyncio.wait_for(asyncio.gather(*tasks), 5) == [1, 2, 3]
        assert finished == ["ccc", "a", "bb"]
        assert sorted(seen_ids) == [1, 3, 5]


@on_both_loops
async def test_deadline_from_timeout_nano_cancels_the_handler_and_fails_the_call() -> None:
    observed: dict[str, object] = {}

    async def slow(req: api.Empty, ctx: CallContext) -> api.Empty:
        observed["remaining"] = ctx.deadline - asyncio.get_running_loop().time()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            observed["cancelled"] = True
            raise
        return api.Empty()

    async with rpc_pair({(PLUGIN_SERVICE, "Shutdown"): (api.Empty, slow)}) as p:
        with pytest.raises(TtrpcError) as caught:
            await asyncio.wait_for(
                p.client.call(PLUGIN_SERVICE, "Shutdown", api.Empty(), api.Empty, timeout=0.2), 5
            )
        assert caught.value.code == Code.DEADLINE_EXCEEDED
        await wait_until(lambda: observed.get("cancelled") is True)
        assert 0 < observed["remaining"] <= 0.21  # uvloop's clock has ms steps
        assert p.client.in_flight == 0


@on_both_loops
async def test_unknown_method_and_service_answer_unimplemented() -> None:
    async with rpc_pair(CONFIGURE) as p:
        with pytest.raises(TtrpcError) as method_err:
            await p.client.call(PLUGIN_SERVICE, "StopContainer", api.StopContainerRequest(),
                                api.StopContainerResponse, timeout=2)
        with pytest.raises(TtrpcError) as service_err:
            await p.client.call("nri.pkg.api.v1alpha1.Other", "Configure", api.ConfigureRequest(),
                                api.ConfigureResponse, timeout=2)
    assert (method_err.value.code, method_err.value.message) == (Code.UNIMPLEMENTED, "method StopContainer")
    assert (service_err.value.code, service_err.value.message) == (
        Code.UNIMPLEMENTED, "service nri.pkg.api.v1alpha1.Other"
    )


@on_both_loops
async def test_handler_errors_become_statuses() -> None:
    async def typed(req: api.Empty, ctx: CallContext) -> api.Empty:
        raise TtrpcError(Code.NOT_FOUND, "no such pod")

    async def buggy(req: api.Empty, ctx: CallContext) -> api.Empty:
        raise ValueError("bad cpuset 0-")

    async def nothing(req: api.Empty, ctx: CallContext) -> api.Empty:
        return None  # type: ignore[return-value]

    handlers = {
        (PLUGIN_SERVICE, "Shutdown"): (api.Empty, typed),
        (PLUGIN_SERVICE, "StateChange"): (api.Empty, buggy),
        (PLUGIN_SERVICE, "RemovePodSandbox"): (api.Empty, nothing),
    }
    results = {}
    async with rpc_pair(handlers) as p:
        for method in ("Shutdown", "StateChange", "RemovePodSandbox"):
            with pytest.raises(TtrpcError) as caught:
                await p.client.call(PLUGIN_SERVICE, method, api.Empty(), api.Empty, timeout=2)
            results[method] = (caught.value.code, caught.value.message)
    assert results == {
        "Shutdown": (Code.NOT_FOUND, "no such pod"),
        "StateChange": (Code.UNKNOWN, "bad cpuset 0-"),
        "RemovePodSandbox": (Code.UNKNOWN, "marshal called with nil"),
    }


@on_both_loops
async def test_request_over_four_mib_is_refused_locally_and_nothing_is_sent() -> None:
    calls = []

    async def configure(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        calls.append(len(req.config))
        return api.ConfigureResponse()

    async with rpc_pair({(PLUGIN_SERVICE, "Configure"): (api.ConfigureRequest, configure)}) as p:
        with pytest.raises(MessageTooLarge) as caught:
            await p.client.call(PLUGIN_SERVICE, "Configure",
                                api.ConfigureRequest(config="x" * MAX_DATA_SIZE),
                                api.ConfigureResponse, timeout=2)
        assert caught.value.code == Code.RESOURCE_EXHAUSTED
        assert caught.value.length > MAX_DATA_SIZE and caught.value.limit == MAX_DATA_SIZE
        await p.client.call(PLUGIN_SERVICE, "Configure", api.ConfigureRequest(config="ok"),
                            api.ConfigureResponse, timeout=2)
    assert calls == [2]


@on_both_loops
async def test_a_response_over_four_mib_reaches_the_caller_as_resource_exhausted() -> None:
    async def huge(req: api.SynchronizeRequest, ctx: CallContext) -> api.SynchronizeResponse:
        return api.SynchronizeResponse(update=[api.ContainerUpdate(container_id="c" * (MAX_DATA_SIZE + 1))])

    async with rpc_pair({(PLUGIN_SERVICE, "Synchronize"): (api.SynchronizeRequest, huge)}) as p:
        with pytest.raises(TtrpcError) as caught:
            await p.client.call(PLUGIN_SERVICE, "Synchronize", api.SynchronizeRequest(),
                                api.SynchronizeResponse, timeout=5)
    assert caught.value.code == Code.RESOURCE_EXHAUSTED


async def _raw_exchange(
    frames: bytes, expect: int, handlers: Mapping[tuple[str, str], Handler] = CONFIGURE
) -> list[tuple[int, request_pb2.Response]]:
    """Write raw ttrpc bytes to a server on conn 1; return `expect` (stream, Response)."""
    async with trunk_pair() as (runtime, plugin):
        server = TtrpcServer(plugin.conn(PLUGIN_SERVICE_CONN), handlers)
        raw = runtime.conn(PLUGIN_SERVICE_CONN)
        raw.write(frames)
        decoder = FrameDecoder()
        out: list[tuple[int, request_pb2.Response]] = []
        while len(out) < expect:
            chunk = await asyncio.wait_for(raw.read(), 5)
            assert chunk, "connection closed early"
            for f in decoder.feed(chunk):
                assert f.type == MessageType.RESPONSE
                out.append((f.stream_id, request_pb2.Response.FromString(f.data)))
        server.close()
        return out


def _request(stream_id: int, payload: bytes = b"", method: str = "Configure") -> bytes:
    body = encode_request(PLUGIN_SERVICE, method, payload, 0)
    return encode_message(stream_id, MessageType.REQUEST, 0, body)


@on_both_loops
async def test_even_and_reused_stream_ids_are_invalid_argument_and_the_conn_stays_open() -> None:
    frames = _request(2) + _request(5) + _request(3) + _request(7)
    replies = await _raw_exchange(frames, 4)
    codes = {sid: (r.status.code, r.status.message) for sid, r in replies}
    assert codes[2] == (Code.INVALID_ARGUMENT, "StreamID must be odd for client initiated streams")
    assert codes[3][0] == Code.INVALID_ARGUMENT
    assert codes[5] == (0, "") and codes[7] == (0, "")


@on_both_loops
async def test_undecodable_payload_is_internal_and_undecodable_envelope_invalid_argument() -> None:
    bad_payload = _request(1, payload=b"\xff\xff\xff")
    bad_envelope = encode_message(3, MessageType.REQUEST, 0, b"\x0a\xff")
    replies = dict(await _raw_exchange(bad_payload + bad_envelope, 2))
    assert replies[1].status.code == Code.INTERNAL
    assert replies[1].status.message.startswith("ttrpc: error unmarshalling payload")
    assert replies[3].status.code == Code.INVALID_ARGUMENT


@on_both_loops
async def test_oversized_request_is_discarded_answered_and_the_stream_stays_in_sync() -> None:
    length = MAX_DATA_SIZE + 100
    oversized = HEADER.pack(length, 1, MessageType.REQUEST, 0) + bytes(length)
    replies = dict(await _raw_exchange(oversized + _request(3), 2))
    assert replies[1].status.code == Code.RESOURCE_EXHAUSTED
    assert replies[1].status.message == (
        "message length 4194404 exceed maximum message size of 4194304"
    )
    assert replies[3].status.code == 0


@on_both_loops
async def test_metadata_and_stream_ids_reach_the_handler() -> None:
    seen: list[CallContext] = []

    async def configure(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        seen.append(ctx)
        return api.ConfigureResponse()

    async with rpc_pair({(PLUGIN_SERVICE, "Configure"): (api.ConfigureRequest, configure)}) as p:
        for _ in range(3):
            await p.client.call(PLUGIN_SERVICE, "Configure", api.ConfigureRequest(),
                                api.ConfigureResponse, metadata=[("k", "1"), ("k", "2")])
    assert [c.stream_id for c in seen] == [1, 3, 5]
    assert seen[0].metadata == {"k": ["1", "2"]} and seen[0].deadline is None


@on_both_loops
async def test_pending_calls_fail_with_connection_closed_when_the_peer_goes_away() -> None:
    async def never(req: api.Empty, ctx: CallContext) -> api.Empty:
        await asyncio.Event().wait()
        return api.Empty()

    async with rpc_pair({(PLUGIN_SERVICE, "Shutdown"): (api.Empty, never)}) as p:
        call = asyncio.create_task(
            p.client.call(PLUGIN_SERVICE, "Shutdown", api.Empty(), api.Empty, timeout=10)
        )
        await wait_until(lambda: p.server.in_flight == 1)
        p.plugin.close("plugin exits")
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(call, 5)
        with pytest.raises(ConnectionClosed):
            await p.client.call(PLUGIN_SERVICE, "Shutdown", api.Empty(), api.Empty)
        await asyncio.wait_for(p.serve_task, 5)
        assert p.server.in_flight == 0


@on_both_loops
async def test_cancelling_serve_cancels_running_handlers_without_answering() -> None:
    cancelled = asyncio.Event()

    async def never(req: api.Empty, ctx: CallContext) -> api.Empty:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        return api.Empty()

    async with rpc_pair({(PLUGIN_SERVICE, "Shutdown"): (api.Empty, never)}) as p:
        call = asyncio.create_task(
            p.client.call(PLUGIN_SERVICE, "Shutdown", api.Empty(), api.Empty, timeout=0.3)
        )
        await wait_until(lambda: p.server.in_flight == 1)
        p.serve_task.cancel()
        await asyncio.wait_for(cancelled.wait(), 5)
        with pytest.raises(TtrpcError) as caught:
            await asyncio.wait_for(call, 5)
        assert caught.value.code == Code.DEADLINE_EXCEEDED  # no reply was sent


@on_both_loops
async def test_odd_handler_results_still_get_an_answer() -> None:
    async def returns_dict(req: api.Empty, ctx: CallContext) -> api.Empty:
        return {"not": "a message"}  # type: ignore[return-value]

    async def undecodable_text(req: api.Empty, ctx: CallContext) -> api.Empty:
        raise OSError("path \udcff gone")

    handlers = {
        (PLUGIN_SERVICE, "Shutdown"): (api.Empty, returns_dict),
        (PLUGIN_SERVICE, "StateChange"): (api.Empty, undecodable_text),
    }
    async with rpc_pair(handlers) as p:
        codes = []
        for method in ("Shutdown", "StateChange"):
            with pytest.raises(TtrpcError) as caught:
                await p.client.call(PLUGIN_SERVICE, method, api.Empty(), api.Empty, timeout=2)
            codes.append(caught.value.code)
    assert codes == [Code.UNKNOWN, Code.UNKNOWN]


@on_both_loops
async def test_a_handler_may_answer_with_its_message_already_encoded() -> None:
    encoded = api.ConfigureResponse(events=0x7F3).SerializeToString()

    async def configure(req: api.ConfigureRequest, ctx: CallContext) -> bytes:
        return encoded

    async with rpc_pair({(PLUGIN_SERVICE, "Configure"): (api.ConfigureRequest, configure)}) as p:  # type: ignore[dict-item]
        resp = await p.client.call(PLUGIN_SERVICE, "Configure", api.ConfigureRequest(), api.ConfigureResponse, timeout=5)
    assert resp.events == 0x7F3


@on_both_loops
async def test_a_plain_function_handler_is_answered_in_the_read_callback_without_a_task() -> None:
    tasks: list[asyncio.Task[object] | None] = []

    def configure(req: api.ConfigureRequest, ctx: CallContext) -> api.ConfigureResponse:
        tasks.append(asyncio.current_task())
        return api.ConfigureResponse(events=len(req.runtime_name))

    def encoded(req: api.Empty, ctx: CallContext) -> bytes:
        tasks.append(asyncio.current_task())
        return api.ConfigureResponse(events=7).SerializeToString()

    handlers: dict[tuple[str, str], Handler] = {
        (PLUGIN_SERVICE, "Configure"): (api.ConfigureRequest, configure),
        (PLUGIN_SERVICE, "Shutdown"): (api.Empty, encoded),
    }
    async with rpc_pair(handlers) as p:
        resp = await p.client.call(PLUGIN_SERVICE, "Configure", api.ConfigureRequest(runtime_name="abc"),
                                   api.ConfigureResponse, timeout=5)
        again = await p.client.call(PLUGIN_SERVICE, "Shutdown", api.Empty(), api.ConfigureResponse, timeout=5)
        assert p.server.in_flight == 0
    assert (resp.events, again.events) == (3, 7)
    assert tasks == [None, None]


@on_both_loops
async def test_calls_behind_a_running_or_waiting_handler_start_after_it_in_their_own_task() -> None:
    started: list[tuple[str, bool]] = []  # (handler, ran in a task)
    release = asyncio.Event()

    async def slow(req: api.Empty, ctx: CallContext) -> api.Empty:
        started.append(("slow", asyncio.current_task() is not None))
        await release.wait()
        return api.Empty()

    def quick(req: api.Empty, ctx: CallContext) -> api.Empty:
        started.append(("quick", asyncio.current_task() is not None))
        return api.Empty()

    handlers: dict[tuple[str, str], Handler] = {
        (PLUGIN_SERVICE, "Shutdown"): (api.Empty, slow),
        (PLUGIN_SERVICE, "StateChange"): (api.Empty, quick),
    }
    async with trunk_pair() as (runtime, plugin):
        server = TtrpcServer(plugin.conn(PLUGIN_SERVICE_CONN), handlers)
        raw = runtime.conn(PLUGIN_SERVICE_CONN)
        # one write: the quick call arrives while the slow one's task has not started yet
        raw.write(_request(1, method="Shutdown") + _request(3, method="StateChange"))
        decoder = FrameDecoder()
        answered: list[tuple[int, int]] = []  # (stream id, status code)

        async def read_answers(count: int) -> None:
            while len(answered) < count:
                for f in decoder.feed(await asyncio.wait_for(raw.read(), 5)):
                    answered.append((f.stream_id, request_pb2.Response.FromString(f.data).status.code))

        await read_answers(1)
        assert answered == [(3, 0)] and server.in_flight == 1  # the slow one still runs
        # a later call, behind the still running slow one, also waits for a task
        raw.write(_request(5, method="StateChange"))
        await read_answers(2)
        release.set()
        await read_answers(3)
        server.close()
    assert answered == [(3, 0), (5, 0), (1, 0)]
    assert started == [("slow", True), ("quick", True), ("quick", True)]


@on_both_loops
async def test_a_plain_function_handler_failure_becomes_a_status_as_in_a_task() -> None:
    tasks: list[asyncio.Task[object] | None] = []

    def typed(req: api.Empty, ctx: CallContext) -> api.Empty:
        tasks.append(asyncio.current_task())
        raise TtrpcError(Code.NOT_FOUND, "no such pod")

    def buggy(req: api.Empty, ctx: CallContext) -> api.Empty:
        tasks.append(asyncio.current_task())
        raise ValueError("bad cpuset 0-")

    def nothing(req: api.Empty, ctx: CallContext) -> api.Empty:
        tasks.append(asyncio.current_task())
        return None  # type: ignore[return-value]

    def cancelled(req: api.Empty, ctx: CallContext) -> api.Empty:
        tasks.append(asyncio.current_task())
        raise asyncio.CancelledError()

    handlers: dict[tuple[str, str], Handler] = {
        (PLUGIN_SERVICE, "Shutdown"): (api.Empty, typed),
        (PLUGIN_SERVICE, "StateChange"): (api.Empty, buggy),
        (PLUGIN_SERVICE, "RemovePodSandbox"): (api.Empty, nothing),
        (PLUGIN_SERVICE, "StopPodSandbox"): (api.Empty, cancelled),
        **CONFIGURE,
    }
    results = {}
    async with rpc_pair(handlers) as p:
        for method in ("Shutdown", "StateChange", "RemovePodSandbox", "StopPodSandbox"):
            with pytest.raises(TtrpcError) as caught:
                await p.client.call(PLUGIN_SERVICE, method, api.Empty(), api.Empty, timeout=2)
            results[method] = (caught.value.code, caught.value.message)
        # the connection serves on
        resp = await p.client.call(PLUGIN_SERVICE, "Configure", api.ConfigureRequest(runtime_name="ok"),
                                   api.ConfigureResponse, timeout=2)
        assert resp.events == 2
    assert results == {
        "Shutdown": (Code.NOT_FOUND, "no such pod"),
        "StateChange": (Code.UNKNOWN, "bad cpuset 0-"),
        "RemovePodSandbox": (Code.UNKNOWN, "marshal called with nil"),
        "StopPodSandbox": (Code.CANCELLED, "context canceled"),
    }
    assert tasks == [None] * 4


async def test_an_awaitable_left_unstarted_by_a_close_is_closed_with_its_task() -> None:
    entered = []

    def handler(req: api.Empty, ctx: CallContext):
        async def rest() -> api.Empty:
            entered.append(ctx.stream_id)
            await asyncio.sleep(3600)
            return api.Empty()

        held.append(rest())
        return held[-1]

    held: list = []
    async with trunk_pair() as (_, plugin):
        server = TtrpcServer(plugin.conn(PLUGIN_SERVICE_CONN), {(PLUGIN_SERVICE, "Shutdown"): (api.Empty, handler)})
        server._on_data(_request(1, method="Shutdown"))  # as the read callback would
        server.close()  # in the same turn: the call's task is cancelled before its first step
        await wait_until(lambda: held and held[0].cr_frame is None)
    # closed when its task was, never run: no "never awaited" warning when it is collected
    assert entered == [] and held[0].cr_frame is None
