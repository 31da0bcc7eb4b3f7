"""gRPC status codes as ttrpc uses them, and the errors a ttrpc call can raise."""

from __future__ import annotations

import asyncio
from enum import IntEnum


class Code(IntEnum):
    """gRPC status codes (google.rpc.Code)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class TtrpcError(Exception):
    """A call failed with a status: returned by the peer or produced locally."""

    def __init__(self, code: Code | int, message: str = "") -> None:
        try:
            self.code: Code | int = Code(code)
        except ValueError:
            self.code = code
        self.message = message
        super().__init__(code, message)

    def __str__(self) -> str:
        name = self.code.name if isinstance(self.code, Code) else str(self.code)
        return name + ": " + self.message if self.message else name


class ConnectionClosed(TtrpcError):
    """The connection closed before (or while) the call completed."""

    def __init__(self, message: str = "ttrpc: closed") -> None:
        super().__init__(Code.UNAVAILABLE, message)


class MessageTooLarge(TtrpcError):
    """A message over the ttrpc limit; refused locally or reported by the peer's reader."""

    def __init__(self, length: int, limit: int) -> None:
        self.length = length
        self.limit = limit
        super().__init__(
            Code.RESOURCE_EXHAUSTED,
            "message length " + str(length) + " exceed maximum message size of " + str(limit),
        )


def status_for_exception(exc: BaseException) -> tuple[int, str]:
    """The (code, message) a server answers for an exception raised by a handler.

    A TtrpcError keeps its own status; common Python errors map the way Go's ttrpc
    maps their Go counterparts; anything else is UNKNOWN with the error text.
    """
    if isinstance(exc, TtrpcError):
        return int(exc.code), exc.message
    if isinstance(exc, asyncio.CancelledError):
        return Code.CANCELLED, "context canceled"
    if isinstance(exc, TimeoutError):
        return Code.DEADLINE_EXCEEDED, "context deadline exceeded"
    if isinstance(exc, EOFError):
        return Code.OUT_OF_RANGE, str(exc) or "EOF"
    if isinstance(exc, (BrokenPipeError, ConnectionResetError)):
        return Code.FAILED_PRECONDITION, str(exc)
    if isinstance(exc, FileExistsError):
        return Code.ALREADY_EXISTS, str(exc)
    if isinstance(exc, FileNotFoundError):
        return Code.NOT_FOUND, str(exc)
    if isinstance(exc, PermissionError):
        return Code.PERMISSION_DENIED, str(exc)
    return Code.UNKNOWN, str(exc) or type(exc).__name__
