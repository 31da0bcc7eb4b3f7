"""The ttrpc envelope: Request/Response protobufs around a method's own message."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from google.protobuf.message import DecodeError, Message

from nri.ttrpc.status import Code, TtrpcError
from proto.google.rpc import status_pb2
from proto.ttrpc import request_pb2

Metadata = Mapping[str, list[str]]


def timeout_to_nano(timeout: float | None) -> int:
    """Seconds (or None = no deadline) to Request.timeout_nano; never 0 for a real deadline."""
    if timeout is None:
        return 0
    return max(1, int(timeout * 1_000_000_000))


def encode_request(
    service: str,
    method: str,
    payload: bytes,
    timeout_nano: int = 0,
    metadata: Iterable[tuple[str, str]] = (),
) -> bytes:
    env = request_pb2.Request(
        service=service, method=method, payload=payload, timeout_nano=timeout_nano
    )
    for key, value in metadata:
        env.metadata.add(key=key, value=value)
    return env.SerializeToString()


def decode_request(data: bytes) -> request_pb2.Request:
    """Raises TtrpcError(INVALID_ARGUMENT) when the envelope is not a Request."""
    try:
        return request_pb2.Request.FromString(data)
    except DecodeError as err:
        raise TtrpcError(Code.INVALID_ARGUMENT, "ttrpc: error unmarshalling request: " + str(err)) from None


def metadata_of(env: request_pb2.Request) -> dict[str, list[str]]:
    """Request metadata as key -> values in arrival order (keys may repeat)."""
    out: dict[str, list[str]] = {}
    for pair in env.metadata:
        out.setdefault(pair.key.lower(), []).append(pair.value)
    return out


_EMPTY_STATUS_RESPONSE_PREFIX = b"\x0a\x00"  # field 1, length 0: the OK status Go sends
_PAYLOAD_TAG = b"\x12"  # field 2, length-delimited


def encode_ok_response(payload: bytes) -> bytes:
    """Response{status: {}, payload} exactly as Go encodes it. Written out by hand: every
    answer with a payload goes through here, and building and encoding two messages for it
    cost ~9 us of a CreateContainer answer with the CPU caches cold (as they are when an
    event comes after a pause), against ~2 us for these bytes."""
    if not payload:
        return _EMPTY_STATUS_RESPONSE_PREFIX
    return _EMPTY_STATUS_RESPONSE_PREFIX + _PAYLOAD_TAG + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    """A non-negative int as a protobuf base-128 varint."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_error_response(code: int, message: str) -> bytes:
    """Response{status: {code, message}}; text that is not valid UTF-8 is repaired."""
    text = message.encode("utf-8", "replace").decode("utf-8")
    return request_pb2.Response(status=status_pb2.Status(code=code, message=text)).SerializeToString()


def decode_response(data: bytes, response_type: type[Message]) -> Message:
    """The method's response, or TtrpcError carrying the peer's status.

    Like Go's client the payload is decoded first, then a non-zero status wins.
    """
    try:
        env = request_pb2.Response.FromString(data)
        result = response_type.FromString(env.payload)
    except DecodeError as err:
        raise TtrpcError(Code.INTERNAL, "ttrpc: error unmarshalling response: " + str(err)) from None
    if env.status.code != Code.OK:
        raise TtrpcError(env.status.code, env.status.message)
    return result
