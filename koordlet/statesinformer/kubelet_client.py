"""GET kubelet's /pods on the event loop: https on its secure port (10250) with the pod's
service-account token, or plain http on the read-only port (10255) where a cluster still
opens it.

h11 parses; this module owns the socket, TLS, the deadline and the size bound. One
request per connection ("Connection: close"): a poll every ten seconds does not
need keep-alive, and a fresh connection survives kubelet restarts for free.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit

import h11
import structlog

from koordlet.config import defaults
from koordlet.statesinformer.from_kubelet import KubeletPod, parse_pod_list

DEFAULT_TIMEOUT_S = defaults.STATES_KUBELET_SYNC_TIMEOUT_SECONDS
MAX_BODY_BYTES = 64 * 1024 * 1024
_READ_CHUNK = 65536
_REASON_CHARS = 300  # how much of a refusal's body the error quotes
_DEFAULT_PORTS = {"http": 80, "https": 443}
_STATUS_HINTS = {
    401: "kubelet refused the service-account token (--kubelet-token-file)",
    403: "the service account needs RBAC `get` on `nodes/proxy`",
}

log = structlog.get_logger(__name__)


class KubeletError(Exception):
    """kubelet could not be reached or did not answer with a PodList."""


@dataclass(frozen=True, slots=True)
class PodsUrl:
    host: str
    port: int
    target: str  # path and query
    tls: bool

    @classmethod
    def parse(cls, url: str) -> "PodsUrl":
        parts = urlsplit(url)
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ValueError("kubelet pods URL must be http(s)://host[:port]/path, got %r" % url)
        target = parts.path or "/pods"
        if parts.query:
            target += "?" + parts.query
        return cls(parts.hostname, parts.port or _DEFAULT_PORTS[parts.scheme], target, parts.scheme == "https")

    def host_header(self) -> str:
        host = "[%s]" % self.host if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS["https" if self.tls else "http"] else "%s:%d" % (host, self.port)


@dataclass(frozen=True, slots=True)
class KubeletAuth:
    """How an https URL is trusted and authenticated; an http URL uses none of it."""

    token_file: str = defaults.KUBELET_TOKEN_FILE  # "": send no token (kubelet's anonymous auth)
    ca_file: str = defaults.KUBELET_CA_FILE
    insecure_tls: bool = False  # do not verify kubelet's certificate at all


class KubeletClient:
    def __init__(self, url: str, timeout_s: float = DEFAULT_TIMEOUT_S, auth: KubeletAuth = KubeletAuth(),
                 observe: Callable[[str, str, float], None] = lambda path, code, seconds: None) -> None:
        self.url = url
        self._observe = observe  # (path, HTTP code, seconds) of each answered request
        self._where = PodsUrl.parse(url)
        self._timeout = timeout_s
        self._auth = auth
        if self._where.tls and auth.insecure_tls:
            log.warning("kubelet_tls_unverified", url=url,
                        reason="--kubelet-insecure-tls: kubelet's certificate is not verified")

    async def pods(self) -> tuple[KubeletPod, ...]:
        try:
            body = await asyncio.wait_for(self._get(), self._timeout)
        except asyncio.TimeoutError:
            raise KubeletError("no answer from %s within %.1fs" % (self.url, self._timeout)) from None
        except ssl.SSLCertVerificationError as exc:
            raise KubeletError("%s: kubelet's certificate is not trusted (%s); give its CA with --kubelet-ca-file "
                               "(now %r), or knowingly --kubelet-insecure-tls"
                               % (self.url, exc.verify_message or exc, self._auth.ca_file)) from None
        except (OSError, h11.ProtocolError) as exc:
            raise KubeletError("%s: %s" % (self.url, exc)) from None
        try:
            return parse_pod_list(body)
        except ValueError as exc:
            raise KubeletError("%s: %s" % (self.url, exc)) from None

    async def _get(self) -> bytes:
        where = self._where
        headers = [("Host", where.host_header()), ("Accept", "application/json"), ("Connection", "close")]
        context = None
        if where.tls:
            context = self._tls_context()
            headers += self._authorization()
        reader, writer = await asyncio.open_connection(where.host, where.port, ssl=context)
        try:
            conn = h11.Connection(h11.CLIENT)
            request = h11.Request(method="GET", target=where.target, headers=headers)
            started = time.monotonic()
            writer.write(conn.send(request) + conn.send(h11.EndOfMessage()))
            await writer.drain()
            status, reason, body = await _read_body(conn, reader)
            self._observe(where.target.split("?")[0], str(status), time.monotonic() - started)
            if status != 200:
                raise KubeletError(_refusal(status, reason, body))
            return body
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass

    def _tls_context(self) -> ssl.SSLContext:
        if self._auth.insecure_tls:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            return context
        # Loaded per request, like the token: a mounted CA bundle can be replaced under us.
        try:
            return ssl.create_default_context(cafile=self._auth.ca_file)
        except (OSError, ValueError) as exc:
            raise KubeletError("kubelet CA file %r (--kubelet-ca-file): %s" % (self._auth.ca_file, exc)) from None

    def _authorization(self) -> list[tuple[str, str]]:
        if not self._auth.token_file:
            return []
        # Read on every request: projected service-account tokens are rotated in place.
        try:
            with open(self._auth.token_file, encoding="utf-8") as file:
                token = file.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise KubeletError("service-account token %r (--kubelet-token-file): %s"
                               % (self._auth.token_file, exc)) from None
        if not token:
            raise KubeletError("service-account token %r (--kubelet-token-file) is empty" % self._auth.token_file)
        return [("Authorization", "Bearer " + token)]


async def _read_body(conn: h11.Connection, reader: asyncio.StreamReader) -> tuple[int, bytes, bytes]:
    """(status, reason, body) of one answer, the body bounded."""
    chunks: list[bytes] = []
    size = 0
    status, reason = 0, b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(_READ_CHUNK))
            continue
        if isinstance(event, h11.Response):
            status, reason = event.status_code, event.reason
        elif isinstance(event, h11.Data):
            size += len(event.data)
            if size > MAX_BODY_BYTES:
                raise KubeletError("PodList larger than %d bytes" % MAX_BODY_BYTES)
            chunks.append(bytes(event.data))
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            break
    return status, reason, b"".join(chunks)


def _refusal(status: int, reason: bytes, body: bytes) -> str:
    """`HTTP 403 Forbidden: <what kubelet said> (<what to do>)`: the reason decides the fix."""
    said = body[:_REASON_CHARS].decode("utf-8", "replace").strip()
    text = "HTTP %d %s" % (status, reason.decode("latin-1")) if reason else "HTTP %d" % status
    if said:
        text += ": " + said
    hint = _STATUS_HINTS.get(status)
    return text + (" (%s)" % hint if hint else "")
