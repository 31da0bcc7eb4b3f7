"""A model of how containerd's Go side reads one virtual connection (protocols.md §2.3).

The mux hands one whole frame per Read call and fails when the caller's buffer is
smaller than the frame; ttrpc reads through a 4096-byte bufio.Reader: 10 header bytes,
then io.ReadFull of the data. Used to check that our sender's chunking is accepted.
"""

from __future__ import annotations

import struct
from collections import deque


class GoReaderRejected(Exception):
    """The Go reader would fail (ENOMEM) or misread this frame sequence."""


class GoTtrpcReaderModel:
    BUFIO_SIZE = 4096

    def __init__(self, frames: list[bytes]) -> None:
        self._frames = deque(frames)
        self._buf = b""  # unread bytes held by bufio

    def _mux_read(self, room: int) -> bytes:
        if not self._frames:
            raise EOFError
        frame = self._frames.popleft()
        if len(frame) > room:
            raise GoReaderRejected(
                "frame of " + str(len(frame)) + " bytes into room for " + str(room)
            )
        return frame

    def _bufio_read(self, want: int) -> bytes:
        if not self._buf:
            if want >= self.BUFIO_SIZE:
                return self._mux_read(want)
            self._buf = self._mux_read(self.BUFIO_SIZE)
        got, self._buf = self._buf[:want], self._buf[want:]
        return got

    def _read_full(self, size: int) -> bytes:
        out = b""
        while len(out) < size:
            out += self._bufio_read(size - len(out))
        return out

    def messages(self) -> list[bytes]:
        """Every whole ttrpc message (header included) the Go side would read."""
        out = []
        while self._frames or self._buf:
            header = self._read_full(10)
            (length,) = struct.unpack(">I", header[:4])
            out.append(header + self._read_full(length))
        return out
