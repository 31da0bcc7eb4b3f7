"""asyncio ttrpc server: dispatches unary Requests to async handlers, concurrently.

Follows Go's server rules (protocols.md §1.4-1.7): stream ids must be odd and
increasing (else INVALID_ARGUMENT, connection kept), unknown service or method is
UNIMPLEMENTED ("service X" / "method X"), an undecodable payload is INTERNAL, a handler's
TtrpcError is sent as its status and any other exception is mapped (UNKNOWN by default),
an oversized request is answered RESOURCE_EXHAUSTED. A handler returns its response message,
or that message already encoded (bytes, written as they are). The request's timeout_nano becomes
`ctx.deadline`; a handler still running at the deadline is cancelled and answered
DEADLINE_EXCEEDED.

Per-call cost matters here (every NRI event is one call). A handler may be a plain
function that returns its response: when no other call of this connection is running or
waiting to start, it is called right in the read callback and answered there, with no
Task (a Task would cost its creation and a loop iteration before its first step). A
handler that returns an awaitable (every `async def` one) gets its own Task, as does every
call that arrives while another is running or waiting: handlers start in the order their
requests arrived, and awaited ones may rely on asyncio.current_task(), asyncio.timeout(),
TaskGroup. Deadlines of running Tasks share one loop timer armed for the earliest one,
instead of a timeout context and timer per call; an inline call has finished before its
deadline could fire.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TypeGuard

import structlog
from google.protobuf.message import DecodeError, Message

from nri.ttrpc.connection import MessageConn
from nri.ttrpc.deadline_timer import DeadlineTimer
from nri.ttrpc.envelope import (
    decode_request,
    encode_error_response,
    encode_ok_response,
    metadata_of,
)
from nri.ttrpc.frame import (
    MAX_DATA_SIZE,
    Flag,
    FrameDecoder,
    MessageType,
    OversizedFrame,
    encode_message,
)
from nri.ttrpc.status import Code, MessageTooLarge, TtrpcError, status_for_exception

log = structlog.get_logger(__name__)

_RESPONSE = int(MessageType.RESPONSE)
_REQUEST = int(MessageType.REQUEST)
_DATA = int(MessageType.DATA)
_REMOTE_OPEN = int(Flag.REMOTE_OPEN)


@dataclass(frozen=True, slots=True)
class CallContext:
    """What a handler knows about its call."""

    service: str
    method: str
    stream_id: int
    deadline: float | None  # event-loop time (loop.time()), None without a deadline
    metadata: Mapping[str, list[str]] = field(default_factory=dict)


Response = Message | bytes  # bytes: the message already encoded
HandlerFn = Callable[[Message, CallContext], Response | Awaitable[Response]]
Handler = tuple[type[Message], HandlerFn]


def _awaitable(response: object) -> TypeGuard[Awaitable[Response]]:
    """A handler's result still to be awaited (checked cheaply for the usual answers first)."""
    return type(response) is not bytes and not isinstance(response, Message) and inspect.isawaitable(response)


def _close_if_cancelled(started: Awaitable[Response], task: asyncio.Task[None]) -> None:
    """A Task cancelled before its first step (the connection closed in the same turn) never
    awaited what the handler had returned: close it now, not when it is collected (with a
    'never awaited' warning). Closing one the Task did await changes nothing."""
    if task.cancelled():
        close = getattr(started, "close", None)
        if close is not None:
            close()


class TtrpcServer:
    """Serves `handlers[(service, method)] = (request_type, fn(request, ctx))`; fn returns the
    response or an awaitable of it."""

    def __init__(self, conn: MessageConn, handlers: Mapping[tuple[str, str], Handler]) -> None:
        self._conn = conn
        self._loop = asyncio.get_running_loop()
        self._handlers = dict(handlers)
        self._services = {service for service, _ in self._handlers}
        self._decoder = FrameDecoder()
        self._last_stream_id = 0
        self._tasks: dict[int, asyncio.Task[None]] = {}  # stream id -> handler task
        self._deadlines = DeadlineTimer(self._loop, self._call_expired)  # running calls only
        self._expired: set[int] = set()  # stream ids cancelled by their deadline
        self._closed = False
        conn.set_receiver(self._on_data, self._on_close)

    async def serve(self) -> None:
        """Run until the connection closes; then cancel handlers still running.

        Cancelling serve() stops answering too: running handlers are cancelled."""
        try:
            await asyncio.shield(self._conn.closed)
        except asyncio.CancelledError:
            self._on_close("serve cancelled")
            raise
        await self._cancel_handlers()

    def close(self) -> None:
        self._on_close("server closed")
        self._conn.close()

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    # --- receiving (runs inside the transport's read callback) ---

    def _on_data(self, data: bytes) -> None:
        for frame in self._decoder.feed(data):
            if isinstance(frame, OversizedFrame):
                self._on_oversized(frame)
            elif frame.type == _REQUEST:
                self._on_request(frame.stream_id, frame.flags, frame.data)
            elif frame.type == _DATA:
                self._reply_error(frame.stream_id, Code.INVALID_ARGUMENT, "StreamID is no longer active")
            else:  # responses and unknown types: ignored, as Go does
                log.warning(
                    "ttrpc_server_ignored_message", stream_id=frame.stream_id, type=int(frame.type)
                )

    def _on_oversized(self, frame: OversizedFrame) -> None:
        error = MessageTooLarge(frame.length, MAX_DATA_SIZE)
        log.warning("ttrpc_oversized_request", stream_id=frame.stream_id, length=frame.length)
        if frame.type == MessageType.REQUEST:
            self._reply_error(frame.stream_id, error.code, error.message)

    def _on_request(self, stream_id: int, flags: int, data: bytes) -> None:
        if stream_id % 2 == 0:
            self._reply_error(
                stream_id, Code.INVALID_ARGUMENT, "StreamID must be odd for client initiated streams"
            )
            return
        if stream_id <= self._last_stream_id:
            self._reply_error(
                stream_id, Code.INVALID_ARGUMENT, "StreamID cannot be re-used and must increment"
            )
            return
        self._last_stream_id = stream_id
        if flags & _REMOTE_OPEN:
            self._reply_error(stream_id, Code.UNIMPLEMENTED, "streaming calls are not supported")
            return
        try:
            env = decode_request(data)
        except TtrpcError as err:
            self._reply_error(stream_id, err.code, err.message)
            return
        handler = self._handlers.get((env.service, env.method))
        if handler is None:
            if env.service not in self._services:
                self._reply_error(stream_id, Code.UNIMPLEMENTED, "service " + env.service)
            else:
                self._reply_error(stream_id, Code.UNIMPLEMENTED, "method " + env.method)
            return
        request_type, fn = handler
        try:
            request = request_type.FromString(env.payload)
        except DecodeError as err:
            self._reply_error(
                stream_id, Code.INTERNAL, "ttrpc: error unmarshalling payload: " + str(err)
            )
            return
        deadline = None
        if env.timeout_nano > 0:
            deadline = self._loop.time() + env.timeout_nano / 1e9
        ctx = CallContext(
            env.service,
            env.method,
            stream_id,
            deadline,
            metadata_of(env) if env.metadata else {},
        )
        if self._tasks:  # behind a running or waiting call: start after it
            self._tasks[stream_id] = self._loop.create_task(self._run(fn, request, ctx, None))
            return
        try:
            response = fn(request, ctx)
        except asyncio.CancelledError:
            self._reply_error(stream_id, Code.CANCELLED, "context canceled")
            return
        except Exception as exc:  # every handler failure becomes a status, never a crash
            self._handler_raised(ctx, exc)
            return
        if _awaitable(response):
            task = self._loop.create_task(self._run(fn, request, ctx, response))
            task.add_done_callback(partial(_close_if_cancelled, response))
            self._tasks[stream_id] = task
        else:
            self._answer(ctx, response)

    async def _run(
        self, fn: HandlerFn, request: Message, ctx: CallContext, started: Awaitable[Response] | None
    ) -> None:
        """A call in its own Task: `started` is what fn already returned, None when fn is
        to be called here."""
        stream_id = ctx.stream_id
        deadline = ctx.deadline
        if deadline is not None:
            # Registered from inside the task, as a timeout context would be: the
            # handler has started before its deadline can cancel it.
            self._deadlines.add(stream_id, deadline)
        try:
            response = fn(request, ctx) if started is None else started
            if _awaitable(response):
                response = await response
        except asyncio.CancelledError:
            if self._expired and self._deadline_cancelled(stream_id):
                self._handler_failed(ctx, Code.DEADLINE_EXCEEDED, "context deadline exceeded")
                return
            if not self._closed:
                self._reply_error(stream_id, Code.CANCELLED, "context canceled")
            raise
        except Exception as exc:  # every handler failure becomes a status, never a crash
            self._expired.discard(stream_id)
            self._handler_raised(ctx, exc)
            return
        finally:
            self._tasks.pop(stream_id, None)
            if deadline is not None:
                self._deadlines.discard(stream_id)
        if self._expired:
            self._expired.discard(stream_id)  # it swallowed its cancellation and answered
        self._answer(ctx, response)

    def _answer(self, ctx: CallContext, response: object) -> None:
        stream_id = ctx.stream_id
        if isinstance(response, Message):
            payload = response.SerializeToString()
        elif isinstance(response, bytes):  # the handler's message, already encoded
            payload = response
        else:
            log.error(
                "ttrpc_handler_returned_no_message",
                service=ctx.service,
                method=ctx.method,
                returned=type(response).__name__,
            )
            self._reply_error(stream_id, Code.UNKNOWN, "marshal called with nil")
            return
        self._send(stream_id, encode_ok_response(payload))

    def _handler_raised(self, ctx: CallContext, exc: Exception) -> None:
        code, message = status_for_exception(exc)
        self._handler_failed(ctx, code, message)

    def _handler_failed(self, ctx: CallContext, code: int, message: str) -> None:
        log.info(
            "ttrpc_handler_failed",
            service=ctx.service,
            method=ctx.method,
            code=int(code),
            error=message,
        )
        self._reply_error(ctx.stream_id, code, message)

    # --- deadlines: one timer for all running calls ---

    def _call_expired(self, stream_id: int) -> None:
        task = self._tasks.get(stream_id)
        if task is not None and not task.done() and stream_id not in self._expired:
            self._expired.add(stream_id)
            task.cancel()

    def _deadline_cancelled(self, stream_id: int) -> bool:
        """True when this CancelledError is the deadline's own (not also a close or
        an outside cancel): then it becomes DEADLINE_EXCEEDED, as with a timeout."""
        if stream_id not in self._expired:
            return False
        self._expired.discard(stream_id)
        task = self._tasks.get(stream_id)
        return task is not None and task.uncancel() == 0 and not self._closed

    # --- sending ---

    def _reply_error(self, stream_id: int, code: int, message: str) -> None:
        self._send(stream_id, encode_error_response(code, message))

    def _send(self, stream_id: int, body: bytes) -> None:
        if self._closed:
            return
        try:
            frame = encode_message(stream_id, _RESPONSE, 0, body)
        except MessageTooLarge as err:
            log.warning("ttrpc_response_too_large", stream_id=stream_id, length=err.length)
            frame = encode_message(stream_id, _RESPONSE, 0, encode_error_response(err.code, err.message))
        try:
            self._conn.write(frame)
        except ConnectionError as err:
            log.info("ttrpc_response_not_sent", stream_id=stream_id, cause=str(err))

    def _on_close(self, cause: str | None) -> None:
        if self._closed:
            return
        self._closed = True
        self._deadlines.close()
        for task in self._tasks.values():
            task.cancel()

    async def _cancel_handlers(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        # A task cancelled before its first step never ran _run's cleanup.
        for stream_id, task in list(self._tasks.items()):
            if task.done():
                del self._tasks[stream_id]
