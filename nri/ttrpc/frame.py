"""Sans-IO ttrpc message framing: a 10-byte big-endian header, then at most 4 MiB of data.

    Length (uint32) | StreamID (uint32) | Type (uint8) | Flags (uint8) | data

`FrameDecoder` is fed bytes in pieces of any size and returns whole frames; a header
announcing more than 4 MiB is not an error of the stream: its data is skipped and an
`OversizedFrame` event is returned so the caller can answer RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from types import MappingProxyType
from typing import NamedTuple

from nri.ttrpc.status import MessageTooLarge

HEADER = struct.Struct(">IIBB")
HEADER_SIZE = HEADER.size  # 10
MAX_DATA_SIZE = 4 << 20  # 4 MiB of data after the header


class MessageType(IntEnum):
    REQUEST = 1
    RESPONSE = 2
    DATA = 3


class Flag(IntFlag):
    """Flag bits; their meaning depends on the message type."""

    REMOTE_CLOSED = 0x1
    REMOTE_OPEN = 0x2
    NO_DATA = 0x4


class Frame(NamedTuple):
    """One ttrpc message. `type` is an int for types this side does not know.

    Immutable like the other values here; a NamedTuple because one is built per message
    on the round-trip path and costs a third of a frozen dataclass to make."""

    stream_id: int
    type: MessageType | int
    flags: int
    data: bytes


@dataclass(frozen=True, slots=True)
class OversizedFrame:
    """A header announced `length` (> 4 MiB) data bytes; they were discarded."""

    stream_id: int
    length: int
    type: MessageType | int = MessageType.REQUEST


def encode_frame(frame: Frame) -> bytes:
    """Header plus data; refuses data over 4 MiB (MessageTooLarge, RESOURCE_EXHAUSTED)."""
    return encode_message(frame.stream_id, frame.type, frame.flags, frame.data)


def encode_message(stream_id: int, msg_type: int, flags: int, data: bytes) -> bytes:
    """Like encode_frame without building a Frame first (the hot path)."""
    length = len(data)
    if length > MAX_DATA_SIZE:
        raise MessageTooLarge(length, MAX_DATA_SIZE)
    return HEADER.pack(length, stream_id, msg_type, flags) + data


_KNOWN_TYPES: Mapping[int, MessageType] = MappingProxyType({int(t): t for t in MessageType})


def _message_type(value: int) -> MessageType | int:
    return _KNOWN_TYPES.get(value, value)


class FrameDecoder:
    """Reassembles ttrpc frames from a byte stream split anywhere."""

    __slots__ = ("_buf", "_discard")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._discard = 0  # data bytes of an oversized frame still to skip

    @property
    def buffered(self) -> int:
        """Bytes held back waiting for the rest of a frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Frame | OversizedFrame]:
        """Consume `data`; return every frame it completes, in order."""
        if not self._buf and not self._discard and len(data) >= HEADER_SIZE:
            # Fast path: the read is exactly one whole message (the usual NRI call).
            length, stream_id, msg_type, flags = HEADER.unpack_from(data)
            if length == len(data) - HEADER_SIZE and length <= MAX_DATA_SIZE:
                return [Frame(stream_id, _KNOWN_TYPES.get(msg_type, msg_type), flags, data[HEADER_SIZE:])]
        out: list[Frame | OversizedFrame] = []
        if self._discard:
            skip = min(self._discard, len(data))
            self._discard -= skip
            data = data[skip:]
            if self._discard:
                return out
        if self._buf:
            self._buf += data
            buf: bytes | bytearray = self._buf
        else:
            buf = data
        pos = self._parse(buf, out)
        if buf is self._buf:
            del self._buf[:pos]
        elif pos < len(buf):
            self._buf = bytearray(memoryview(buf)[pos:])
        return out

    def _parse(self, buf: bytes | bytearray, out: list[Frame | OversizedFrame]) -> int:
        pos = 0
        end_of_buf = len(buf)
        unpack = HEADER.unpack_from
        known = _KNOWN_TYPES
        while end_of_buf - pos >= HEADER_SIZE:
            length, stream_id, msg_type, flags = unpack(buf, pos)
            start = pos + HEADER_SIZE
            if length > MAX_DATA_SIZE:
                out.append(OversizedFrame(stream_id, length, _message_type(msg_type)))
                available = end_of_buf - start
                if available >= length:
                    pos = start + length
                    continue
                self._discard = length - available
                return end_of_buf
            end = start + length
            if end > end_of_buf:
                break
            out.append(Frame(stream_id, known.get(msg_type, msg_type), flags, bytes(buf[start:end])))
            pos = end
        return pos
