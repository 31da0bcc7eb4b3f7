"""What the ttrpc client and server need from a byte-stream connection.

A mux VirtualConn satisfies it; so can any other object (a plain socket adapter in
tests, for example).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol


class MessageConn(Protocol):
    """An ordered byte stream that takes whole ttrpc messages on write."""

    closed: asyncio.Future[str | None]

    def set_receiver(
        self, on_data: Callable[[bytes], None], on_close: Callable[[str | None], None]
    ) -> None: ...

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...
