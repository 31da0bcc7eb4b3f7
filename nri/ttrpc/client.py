"""asyncio ttrpc client: unary calls over one connection, any number in flight.

Call timeouts share one loop timer armed for the earliest pending deadline (a call
that is answered in time costs no timer of its own).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import structlog
from google.protobuf.message import Message

from nri.ttrpc.connection import MessageConn
from nri.ttrpc.deadline_timer import DeadlineTimer
from nri.ttrpc.envelope import decode_response, encode_request, timeout_to_nano
from nri.ttrpc.frame import (
    MAX_DATA_SIZE,
    Frame,
    FrameDecoder,
    MessageType,
    OversizedFrame,
    encode_message,
)
from nri.ttrpc.status import Code, ConnectionClosed, MessageTooLarge, TtrpcError

log = structlog.get_logger(__name__)

_REQUEST = int(MessageType.REQUEST)
_RESPONSE = int(MessageType.RESPONSE)


class TtrpcClient:
    """Sends Requests on odd, increasing stream ids and matches Responses by id."""

    def __init__(self, conn: MessageConn) -> None:
        self._conn = conn
        self._loop = asyncio.get_running_loop()
        self._decoder = FrameDecoder()
        self._pending: dict[int, asyncio.Future[bytes]] = {}
        self._deadlines = DeadlineTimer(self._loop, self._call_expired)  # calls with a timeout
        self._next_stream_id = 1
        self._closed_cause: str | None = None
        self._closed = False
        conn.set_receiver(self._on_data, self._on_close)

    @property
    def is_closed(self) -> bool:
        return self._closed

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    async def call(
        self,
        service: str,
        method: str,
        request: Message,
        response_type: type[Message],
        timeout: float | None = None,
        metadata: Iterable[tuple[str, str]] = (),
    ) -> Message:
        """One unary call. Raises TtrpcError (the peer's status, DEADLINE_EXCEEDED when
        `timeout` seconds pass, RESOURCE_EXHAUSTED / MessageTooLarge for a request over
        4 MiB, refused before sending) or ConnectionClosed."""
        if self._closed:
            raise ConnectionClosed("ttrpc: closed (" + str(self._closed_cause) + ")")
        body = encode_request(
            service, method, request.SerializeToString(), timeout_to_nano(timeout), metadata
        )
        if len(body) > MAX_DATA_SIZE:
            raise MessageTooLarge(len(body), MAX_DATA_SIZE)
        stream_id = self._next_stream_id
        self._next_stream_id = stream_id + 2
        future: asyncio.Future[bytes] = self._loop.create_future()
        self._pending[stream_id] = future
        try:
            try:
                self._conn.write(encode_message(stream_id, _REQUEST, 0, body))
            except ConnectionError as err:
                raise ConnectionClosed("ttrpc: closed (" + str(err) + ")") from err
            if timeout is not None:
                self._deadlines.add(stream_id, self._loop.time() + timeout)
            data = await future
        finally:
            del self._pending[stream_id]
            if timeout is not None:
                self._deadlines.discard(stream_id)
        return decode_response(data, response_type)

    def close(self) -> None:
        """Fail every pending call with ConnectionClosed and close the connection."""
        self._on_close("client closed")
        self._conn.close()

    # --- receiving (runs inside the transport's read callback) ---

    def _call_expired(self, stream_id: int) -> None:
        future = self._pending.get(stream_id)
        if future is not None and not future.done():
            future.set_exception(TtrpcError(Code.DEADLINE_EXCEEDED, "context deadline exceeded"))

    def _on_data(self, data: bytes) -> None:
        for frame in self._decoder.feed(data):
            if isinstance(frame, OversizedFrame):
                self._fail(frame.stream_id, MessageTooLarge(frame.length, MAX_DATA_SIZE))
                continue
            if frame.type == _RESPONSE:
                self._on_response(frame.stream_id, frame.data)
            else:
                self._ignore(frame)

    def _on_response(self, stream_id: int, data: bytes) -> None:
        future = self._pending.get(stream_id)
        if future is not None and not future.done():
            future.set_result(data)
        else:
            log.warning("ttrpc_response_for_unknown_stream", stream_id=stream_id)

    @staticmethod
    def _ignore(frame: Frame) -> None:
        log.warning("ttrpc_client_ignored_message", stream_id=frame.stream_id, type=int(frame.type))

    def _fail(self, stream_id: int, error: TtrpcError) -> None:
        future = self._pending.get(stream_id)
        if future is not None and not future.done():
            future.set_exception(error)
        else:
            log.warning("ttrpc_oversized_response_dropped", stream_id=stream_id, error=str(error))

    def _on_close(self, cause: str | None) -> None:
        if self._closed:
            return
        self._closed = True
        self._closed_cause = cause
        self._deadlines.close()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed("ttrpc: closed (" + str(cause) + ")"))
