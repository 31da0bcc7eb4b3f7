"""A virtual connection of the NRI mux: one ordered byte stream in each direction.

Incoming bytes are either queued for `read()` or pushed synchronously to a receiver
set with `set_receiver()` (what the ttrpc client and server use: no task switch per
message). Outgoing `write()` takes one whole ttrpc message and frames it for Go's reader.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Protocol

import structlog

from nri.mux.frame import GO_READ_BUFFER, MUX_HEADER, MuxClosedError, encode_mux_frames

log = structlog.get_logger(__name__)

DataReceiver = Callable[[bytes], None]
CloseReceiver = Callable[[str | None], None]


class TrunkLink(Protocol):
    """What a VirtualConn needs from the trunk that owns it."""

    loop: asyncio.AbstractEventLoop

    async def drain(self) -> None: ...

    def _write(self, data: bytes) -> None: ...

    def _forget(self, conn_id: int, vconn: VirtualConn) -> None: ...

    def _enqueued(self, size: int) -> None: ...

    def _dequeued(self, size: int) -> None: ...


class VirtualConn:
    """One multiplexed connection: an ordered byte stream in each direction."""

    __slots__ = (
        "conn_id",
        "closed",
        "_trunk",
        "_queue",
        "_queued",
        "_waiter",
        "_on_data",
        "_on_close",
        "_cause",
    )

    def __init__(self, trunk: TrunkLink, conn_id: int) -> None:
        self.conn_id = conn_id
        self._trunk = trunk
        self.closed: asyncio.Future[str | None] = trunk.loop.create_future()
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._waiter: asyncio.Future[None] | None = None
        self._on_data: DataReceiver | None = None
        self._on_close: CloseReceiver | None = None
        self._cause: str | None = None

    @property
    def is_closed(self) -> bool:
        return self.closed.done()

    async def read(self) -> bytes:
        """The next bytes of the incoming stream (any split); b"" once closed."""
        while not self._queue:
            if self.closed.done():
                return b""
            self._waiter = self._trunk.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        data = b"".join(self._queue) if len(self._queue) > 1 else self._queue[0]
        self._queue.clear()
        self._trunk._dequeued(len(data))
        self._queued = 0
        return data

    def set_receiver(self, on_data: DataReceiver, on_close: CloseReceiver) -> None:
        """Push mode: call on_data(bytes) for every incoming slice, on_close(cause) once.

        Queued bytes are handed over at once. The callbacks run inside the trunk's read
        callback and must not block; an exception from them closes this connection.
        """
        self._on_data = on_data
        self._on_close = on_close
        if self._queue:
            data = b"".join(self._queue)
            self._queue.clear()
            self._trunk._dequeued(self._queued)
            self._queued = 0
            self._push(data)
        if self.closed.done():
            on_close(self._cause)

    def write(self, data: bytes) -> None:
        """Send one whole ttrpc message, framed the way Go's reader needs it."""
        if self.closed.done():
            raise MuxClosedError("virtual connection " + str(self.conn_id) + " is closed")
        if len(data) <= GO_READ_BUFFER:  # the common case: one frame, header packed here
            self._trunk._write(MUX_HEADER.pack(self.conn_id, len(data)) + data)
        else:
            self._trunk._write(encode_mux_frames(self.conn_id, data))

    async def drain(self) -> None:
        """Wait while the trunk's write buffer is over its high-water mark."""
        await self._trunk.drain()

    def close(self) -> None:
        """Stop using this connection id; sends nothing (the mux has no close frame).

        Bytes not yet read are dropped; read() returns b"" from now on."""
        self._trunk._forget(self.conn_id, self)
        self._queue.clear()
        self._queued = 0
        self._terminate(None)

    # --- called by the trunk ---

    def _deliver(self, payload: bytes) -> None:
        on_data = self._on_data
        if on_data is not None:
            try:
                on_data(payload)
            except Exception as err:  # a receiver bug must not take the whole trunk down
                self._receiver_failed(err)
            return
        self._queue.append(payload)
        self._queued += len(payload)
        self._trunk._enqueued(len(payload))
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _push(self, data: bytes) -> None:
        assert self._on_data is not None
        try:
            self._on_data(data)
        except Exception as err:  # a receiver bug must not take the whole trunk down
            self._receiver_failed(err)

    def _receiver_failed(self, err: Exception) -> None:
        log.error(
            "nri_mux_receiver_failed",
            conn_id=self.conn_id,
            error=repr(err),
            exc_info=True,
        )
        self.close()

    def _terminate(self, cause: str | None) -> None:
        if self.closed.done():
            return
        self._cause = cause
        self.closed.set_result(cause)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self._on_close is not None:
            try:
                self._on_close(cause)
            except Exception as err:
                log.error("nri_mux_close_callback_failed", conn_id=self.conn_id, error=repr(err))
