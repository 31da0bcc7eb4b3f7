"""Sans-IO codec for the NRI connection multiplexer (containerd/nri pkg/net/multiplex).

A mux frame is an 8-byte big-endian header (connection id, payload length) and the
payload: an arbitrary slice of that virtual connection's byte stream.

Sending to a Go peer needs care (protocols.md §2.3): Go's reader hands one whole mux
frame to a ttrpc `bufio.Reader` of 4096 bytes, so the frame that starts a ttrpc message
must be <= 4096 bytes and a later frame must not exceed what the reader still needs.
`split_for_go_reader` reproduces Go's own writer: a message of <= 4096 bytes in one
frame, a larger one as its first 4096 bytes and then the rest.
"""

from __future__ import annotations

import struct

MUX_HEADER = struct.Struct(">II")
MUX_HEADER_SIZE = MUX_HEADER.size  # 8

PLUGIN_SERVICE_CONN = 1  # runtime -> plugin requests (Plugin service served by the plugin)
RUNTIME_SERVICE_CONN = 2  # plugin -> runtime requests (Runtime service served by the runtime)

GO_READ_BUFFER = 4096  # bufio.Reader size used by Go's ttrpc channel
GO_MAX_PAYLOAD = (4 << 20) + 10  # largest frame Go's mux writes (NRI >= 0.8)
MAX_ACCEPTED_PAYLOAD = 16 << 20  # sanity cap on what we accept from a peer


class MuxError(Exception):
    """Base of the multiplexer's errors."""


class MuxProtocolError(MuxError):
    """The peer sent something that is not a valid mux stream; the trunk must close."""


class MuxClosedError(MuxError, ConnectionError):
    """Write to a virtual connection or trunk that is already closed."""


def split_for_go_reader(data: bytes) -> list[bytes]:
    """Chunk one whole ttrpc message (header included) the way Go's writer does.

    <= 4096 bytes: one chunk. Larger: the first 4096 bytes, then the rest; the rest is
    only cut again if it exceeds the largest frame Go writes (not reachable for a
    legal ttrpc message), and every such chunk is no larger than what the Go reader
    is still missing when it arrives.
    """
    if len(data) <= GO_READ_BUFFER:
        return [data]
    view = memoryview(data)
    chunks = [bytes(view[:GO_READ_BUFFER])]
    pos = GO_READ_BUFFER
    while pos < len(data):
        end = min(pos + GO_MAX_PAYLOAD, len(data))
        chunks.append(bytes(view[pos:end]))
        pos = end
    return chunks


def encode_mux_frames(conn_id: int, data: bytes) -> bytes:
    """All mux frames carrying one ttrpc message on `conn_id`, ready for one write."""
    if len(data) <= GO_READ_BUFFER:
        return MUX_HEADER.pack(conn_id, len(data)) + data
    pack = MUX_HEADER.pack
    return b"".join(pack(conn_id, len(chunk)) + chunk for chunk in split_for_go_reader(data))


class MuxDecoder:
    """Turns the trunk's byte stream into (conn_id, payload) events; any split is fine."""

    __slots__ = ("_buf", "_max_payload")

    def __init__(self, max_payload: int = MAX_ACCEPTED_PAYLOAD) -> None:
        self._buf = bytearray()
        self._max_payload = max_payload

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """Consume `data`; return the completed frames. Raises MuxProtocolError on a
        length over the sanity cap (the stream cannot be trusted after that)."""
        if not self._buf and len(data) >= MUX_HEADER_SIZE:
            # Fast path: the read is exactly one whole frame (one ttrpc message of
            # <= 4 KiB, the usual NRI call).
            conn_id, length = MUX_HEADER.unpack_from(data)
            if length == len(data) - MUX_HEADER_SIZE and length <= self._max_payload:
                return [(conn_id, data[MUX_HEADER_SIZE:])]
        out: list[tuple[int, bytes]] = []
        if self._buf:
            self._buf += data
            buf: bytes | bytearray = self._buf
        else:
            buf = data
        pos = 0
        end_of_buf = len(buf)
        unpack = MUX_HEADER.unpack_from
        limit = self._max_payload
        while end_of_buf - pos >= MUX_HEADER_SIZE:
            conn_id, length = unpack(buf, pos)
            if length > limit:
                self._buf = bytearray()
                raise MuxProtocolError(
                    "mux frame for conn " + str(conn_id) + " announces " + str(length)
                    + " bytes, over the limit of " + str(limit)
                )
            start = pos + MUX_HEADER_SIZE
            end = start + length
            if end > end_of_buf:
                break
            out.append((conn_id, bytes(buf[start:end])))
            pos = end
        if buf is self._buf:
            del self._buf[:pos]
        elif pos < end_of_buf:
            self._buf = bytearray(memoryview(buf)[pos:])
        return out
