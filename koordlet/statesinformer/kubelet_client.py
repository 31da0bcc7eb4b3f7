"""GET kubelet's /pods over plain HTTP (the read-only port, 10255) on the event loop.

h11 parses; this module owns the socket, the deadline and the size bound. One
request per connection ("Connection: close"): a poll every ten seconds does not
need keep-alive, and a fresh connection survives kubelet restarts for free.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import urlsplit

import h11

from koordlet.statesinformer.from_kubelet import KubeletPod, parse_pod_list

DEFAULT_TIMEOUT_S = 5.0
MAX_BODY_BYTES = 64 * 1024 * 1024
_READ_CHUNK = 65536


class KubeletError(Exception):
    """kubelet could not be reached or did not answer with a PodList."""


@dataclass(frozen=True, slots=True)
class PodsUrl:
    host: str
    port: int
    target: str  # path and query

    @classmethod
    def parse(cls, url: str) -> "PodsUrl":
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError("kubelet pods URL must be http://host[:port]/path, got %r" % url)
        target = parts.path or "/pods"
        if parts.query:
            target += "?" + parts.query
        return cls(parts.hostname, parts.port or 80, target)


class KubeletClient:
    def __init__(self, url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.url = url
        self._where = PodsUrl.parse(url)
        self._timeout = timeout_s

    async def pods(self) -> tuple[KubeletPod, ...]:
        try:
            body = await asyncio.wait_for(self._get(), self._timeout)
        except asyncio.TimeoutError:
            raise KubeletError("no answer from %s within %.1fs" % (self.url, self._timeout)) from None
        except (OSError, h11.ProtocolError) as exc:
            raise KubeletError("%s: %s" % (self.url, exc)) from None
        try:
            return parse_pod_list(body)
        except ValueError as exc:
            raise KubeletError("%s: %s" % (self.url, exc)) from None

    async def _get(self) -> bytes:
        where = self._where
        reader, writer = await asyncio.open_connection(where.host, where.port)
        try:
            conn = h11.Connection(h11.CLIENT)
            host = where.host if where.port == 80 else "%s:%d" % (where.host, where.port)
            request = h11.Request(method="GET", target=where.target, headers=[
                ("Host", host), ("Accept", "application/json"), ("Connection", "close")])
            writer.write(conn.send(request) + conn.send(h11.EndOfMessage()))
            await writer.drain()
            return await _read_body(conn, reader)
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass


async def _read_body(conn: h11.Connection, reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    size = 0
    status = 0
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(_READ_CHUNK))
            continue
        if isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            size += len(event.data)
            if size > MAX_BODY_BYTES:
                raise KubeletError("PodList larger than %d bytes" % MAX_BODY_BYTES)
            chunks.append(bytes(event.data))
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            break
    if status != 200:
        raise KubeletError("HTTP %d" % status)
    return b"".join(chunks)
