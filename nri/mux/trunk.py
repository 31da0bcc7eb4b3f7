"""asyncio trunk: one unix stream socket carrying the NRI mux's virtual connections.

The byte path is an asyncio Protocol (no StreamReader, no task per frame): bytes from
the socket go through MuxDecoder straight into the VirtualConn of their connection id.

Reading starts one loop iteration after `Trunk.open()` returns, so code that opens its
virtual connections right after `await Trunk.open(sock)` (before its next await) never
misses a frame. With `paused=True` reading waits for `trunk.resume_reading()` instead,
like Go's mux built with reading blocked.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import cast

import structlog

from nri.mux.frame import (
    PLUGIN_SERVICE_CONN,
    RUNTIME_SERVICE_CONN,
    MuxClosedError,
    MuxDecoder,
    MuxProtocolError,
)
from nri.mux.virtual_conn import VirtualConn

log = structlog.get_logger(__name__)

__all__ = [
    "PLUGIN_SERVICE_CONN",
    "RUNTIME_SERVICE_CONN",
    "Trunk",
    "VirtualConn",
]

READ_CHUNK = 256 * 1024
QUEUE_HIGH_WATER = 16 << 20  # bytes queued for read() before the trunk stops reading
QUEUE_LOW_WATER = 1 << 20
MAX_UNKNOWN_CONN_WARNINGS = 16


class _TrunkProtocol(asyncio.Protocol):
    """Feeds socket bytes to the trunk; pauses reading until the trunk says go."""

    def __init__(self, trunk: Trunk, on_connected: Callable[[Trunk], None] | None = None) -> None:
        self._trunk = trunk
        self._on_connected = on_connected

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        stream.pause_reading()
        self._trunk._attach(stream)
        if self._on_connected is not None:
            self._on_connected(self._trunk)

    def data_received(self, data: bytes) -> None:
        self._trunk._on_bytes(data)

    def eof_received(self) -> bool:
        self._trunk.close("eof")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._trunk.close(repr(exc) if exc is not None else "connection lost")

    def pause_writing(self) -> None:
        self._trunk._set_write_paused(True)

    def resume_writing(self) -> None:
        self._trunk._set_write_paused(False)


class Trunk:
    """The mux over one connected unix stream socket."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.closed: asyncio.Future[str | None] = loop.create_future()
        self._decoder = MuxDecoder()
        self._conns: dict[int, VirtualConn] = {}
        self._transport: asyncio.Transport | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._read_gate: asyncio.Event | None = None
        self._reading_paused = True  # what the transport is told
        self._user_paused = True  # until open()/from_streams() or the caller resumes
        self._flow_paused = False  # too many bytes queued for read()
        self._held: list[bytes] = []  # bytes that arrived while reading was paused
        self._queued = 0
        self._write_paused: asyncio.Future[None] | None = None
        self._unknown_conns: set[int] = set()

    # --- construction ---

    @classmethod
    async def open(cls, sock: socket.socket, *, paused: bool = False) -> Trunk:
        """Wrap a connected AF_UNIX stream socket (dialled, accepted or inherited)."""
        loop = asyncio.get_running_loop()
        trunk = cls(loop)
        sock.setblocking(False)
        await loop.create_unix_connection(lambda: _TrunkProtocol(trunk), sock=sock)
        if not paused:
            loop.call_soon(trunk.resume_reading)
        return trunk

    @classmethod
    def from_streams(
        cls, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, paused: bool = False
    ) -> Trunk:
        """Wrap an asyncio stream pair (slower than open(); for callers that have streams)."""
        loop = asyncio.get_running_loop()
        trunk = cls(loop)
        trunk._writer = writer
        trunk._read_gate = asyncio.Event()
        trunk._reader_task = loop.create_task(trunk._pump_stream(reader))
        if not paused:
            trunk.resume_reading()
        return trunk

    @classmethod
    def for_server_connection(
        cls, loop: asyncio.AbstractEventLoop, on_connected: Callable[[Trunk], None]
    ) -> asyncio.Protocol:
        """A protocol for loop.create_unix_server(): calls on_connected(trunk), paused."""
        return _TrunkProtocol(cls(loop), on_connected)

    # --- public API ---

    def conn(self, conn_id: int) -> VirtualConn:
        """The virtual connection with this id, opened on first use."""
        if conn_id <= 0 or conn_id > 0xFFFFFFFF:
            raise ValueError("mux connection id must be in 1..2**32-1, got " + str(conn_id))
        existing = self._conns.get(conn_id)
        if existing is not None:
            return existing
        vconn = VirtualConn(self, conn_id)
        if self.closed.done():
            vconn._terminate(self.closed.result())
        else:
            self._conns[conn_id] = vconn
        return vconn

    @property
    def is_closed(self) -> bool:
        return self.closed.done()

    def resume_reading(self) -> None:
        """Let bytes flow (after open(paused=True), or after pause_reading())."""
        self._user_paused = False
        self._apply_reading()

    def pause_reading(self) -> None:
        self._user_paused = True
        self._apply_reading()

    def _apply_reading(self) -> None:
        want_paused = self._user_paused or self._flow_paused
        if self.closed.done() or want_paused == self._reading_paused:
            return
        self._reading_paused = want_paused
        if not want_paused and self._held:
            held = b"".join(self._held)
            self._held.clear()
            self._on_bytes(held)
            if self._reading_paused or self.closed.done():
                return
        if self._transport is not None:
            if want_paused:
                self._transport.pause_reading()
            else:
                self._transport.resume_reading()
        elif self._read_gate is not None:
            if want_paused:
                self._read_gate.clear()
            else:
                self._read_gate.set()

    async def drain(self) -> None:
        if self._writer is not None:
            await self._writer.drain()
        elif self._write_paused is not None:
            await asyncio.shield(self._write_paused)

    def close(self, cause: str | None = None) -> None:
        """Close the socket and every virtual connection; idempotent."""
        if self.closed.done():
            return
        self.closed.set_result(cause)
        log.info("nri_trunk_closed", cause=cause)
        conns = list(self._conns.values())
        self._conns.clear()
        for vconn in conns:
            vconn._terminate(cause)
        if self._transport is not None:
            self._transport.close()
        if self._writer is not None:
            self._writer.close()
        if self._reader_task is not None and self._reader_task is not asyncio.current_task():
            self._reader_task.cancel()
        if self._write_paused is not None and not self._write_paused.done():
            self._write_paused.set_result(None)

    def peer_pid(self) -> int | None:
        """The peer's pid from SO_PEERCRED (for logs), or None when unavailable."""
        source = self._transport if self._transport is not None else self._writer
        sock = source.get_extra_info("socket") if source is not None else None
        if sock is None or sock.family != socket.AF_UNIX:
            return None
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        except OSError:
            return None
        return int.from_bytes(creds[:4], "little")

    # --- internals ---

    def _attach(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    async def _pump_stream(self, reader: asyncio.StreamReader) -> None:
        assert self._read_gate is not None
        try:
            while True:
                await self._read_gate.wait()
                data = await reader.read(READ_CHUNK)
                if not data:
                    self.close("eof")
                    return
                self._on_bytes(data)
                if self.closed.done():
                    return
        except asyncio.CancelledError:
            raise
        except OSError as err:
            self.close(repr(err))

    def _on_bytes(self, data: bytes) -> None:
        if self.closed.done():
            return
        if self._reading_paused:
            # Some loops (uvloop) start reading after connection_made despite our
            # pause; hold such bytes until the trunk is resumed.
            self._held.append(data)
            if self._transport is not None:
                self._transport.pause_reading()
            return
        decoder = self._decoder
        try:
            frames = decoder.feed(data)
        except MuxProtocolError as err:
            log.error("nri_mux_protocol_error", cause=str(err))
            self.close("protocol error: " + str(err))
            return
        conns = self._conns
        for conn_id, payload in frames:
            vconn = conns.get(conn_id)
            if vconn is None:
                self._note_unknown(conn_id)
            elif payload:
                vconn._deliver(payload)

    def _note_unknown(self, conn_id: int) -> None:
        if conn_id in self._unknown_conns or len(self._unknown_conns) >= MAX_UNKNOWN_CONN_WARNINGS:
            return
        self._unknown_conns.add(conn_id)
        log.warning("nri_mux_frame_for_unopened_conn_discarded", conn_id=conn_id)

    def _write(self, data: bytes) -> None:
        if self.closed.done():
            raise MuxClosedError("trunk is closed")
        if self._transport is not None:
            if self._transport.is_closing():
                raise MuxClosedError("trunk transport is closing")
            self._transport.write(data)
        elif self._writer is not None:
            self._writer.write(data)
        else:
            raise MuxClosedError("trunk has no transport")

    def _forget(self, conn_id: int, vconn: VirtualConn) -> None:
        if self._conns.get(conn_id) is vconn:
            del self._conns[conn_id]
            if vconn._queued:
                self._dequeued(vconn._queued)

    def _enqueued(self, size: int) -> None:
        self._queued += size
        if not self._flow_paused and self._queued > QUEUE_HIGH_WATER:
            self._flow_paused = True
            self._apply_reading()

    def _dequeued(self, size: int) -> None:
        self._queued -= size
        if self._flow_paused and self._queued < QUEUE_LOW_WATER:
            self._flow_paused = False
            self._apply_reading()

    def _set_write_paused(self, paused: bool) -> None:
        if paused:
            if self._write_paused is None or self._write_paused.done():
                self._write_paused = self.loop.create_future()
        elif self._write_paused is not None and not self._write_paused.done():
            self._write_paused.set_result(None)
