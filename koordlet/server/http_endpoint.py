"""The daemon's HTTP endpoint: GET /metrics, /healthz, /readyz, and read-only
routes that modules add (`add_route`), such as /api/v1/pods.

HTTP/1.1 parsing is h11's (a sans-IO state machine); this module owns only the
socket and the routing. Everything runs on the daemon's event loop, except what could
hold it for long: /metrics is rendered in a worker thread, a route may answer with an
awaitable (built in steps, encoded in a worker: `json_reply_in_worker`), and a large
reply is gzipped in a worker. Requests alike at the same time are answered once
(shared_render.py): a /metrics render also serves the scrapes of its kind that come within
HTTP_METRICS_REUSE_SECONDS of its start, a route's answer only those asked while it is made.

Limits (koordlet.config.defaults): a request's head must arrive whole within
HTTP_HEAD_TIMEOUT_SECONDS of its first byte, an idle keep-alive connection is closed
after HTTP_IDLE_TIMEOUT_SECONDS, at most HTTP_MAX_CONNECTIONS are served at once and the
last HTTP_PROBE_RESERVE of those answer only the probes (/healthz, /readyz). No route takes
a body: a request that carries one is answered (405, or 413 for GET/HEAD) and the
connection closed without reading it.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import json
import socket
import zlib
from dataclasses import dataclass
from types import ModuleType
from typing import Awaitable, Callable, Iterator, Protocol

import h11
import structlog

from koordlet.agent import Readiness, StartupError
from koordlet.config import defaults
from koordlet.metrics.client import OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE, CollectorRegistry
from koordlet.metrics.text import RegistryText
from koordlet.server.shared_render import SharedRender
from koordlet.util.json_text import canonical_json
from koordlet.util.switch_interval import render_in_worker

log = structlog.get_logger(__name__)

_READ_CHUNK = 65536
_WRITE_CHUNK = 65536


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    # the body, or its parts written one after the other: /metrics' few MB are not copied
    # into one buffer (each multi-MB buffer costs ~1,000 page faults: glibc hands such
    # blocks back to the kernel when freed)
    payload: bytes | tuple[bytes, ...]
    content_type: str = "text/plain; charset=utf-8"

    @property
    def parts(self) -> tuple[bytes, ...]:
        return (self.payload,) if isinstance(self.payload, bytes) else self.payload

    @property
    def body(self) -> bytes:
        return b"".join(self.parts)

    @property
    def length(self) -> int:
        return sum(map(len, self.parts))


def json_reply(value: object, status: int = 200) -> Reply:
    return Reply(status, json.dumps(value, separators=(",", ":"), sort_keys=True).encode() + b"\n",
                 "application/json")


async def json_reply_in_worker(value: object, status: int = 200) -> Reply:
    """json_reply's reply, encoded in a worker thread a piece at a time (util/json_text.py),
    so a document that grows with the pods never holds the loop for its whole encoding.
    `value` must not change while it is encoded: hand over a document nothing mutates."""
    text = await render_in_worker(canonical_json, value)
    return Reply(status, text.encode() + b"\n", "application/json")


# A route handler takes the query string (without "?") and answers, or returns an awaitable of
# its answer; it is called on the loop, so it must not block: work that grows with the pods
# belongs in the awaitable (steps that yield, a worker for the encoding).
RouteHandler = Callable[[str], "Reply | Awaitable[Reply]"]
# Families in the exposition format, OpenMetrics when the argument is True (see add_metrics_text).
MetricsText = Callable[[bool], bytes]
# (openmetrics, internal, external) -> the families of the parts asked for, in one pass, as
# one body or its pieces in order (written without joining them)
MetricsParts = Callable[[bool, bool, bool], "bytes | list[bytes]"]


class Routes(Protocol):
    """The part of the HTTP endpoint agents use: read-only routes and /metrics text."""

    def add_route(self, path: str, handler: RouteHandler) -> None: ...

    def add_metrics_text(self, render: MetricsText, external: bool = False) -> None: ...

    def add_metrics_parts(self, render: MetricsParts) -> None: ...

# koordlet's three exposition paths: everything, the agent's own (internal), and the
# figures users consume (external: resource summaries, CPI, PSI)
METRICS_PATHS = {"/metrics": (True, True), "/internal-metrics": (True, False), "/external-metrics": (False, True)}
_BUILT_IN = frozenset({*METRICS_PATHS, "/healthz", "/readyz"})
_PROBES = frozenset({"/healthz", "/readyz"})
# what a log line or an error answer quotes of a request, at most
_QUOTED = 120





class HttpEndpoint:
    """A daemon module serving the built-in routes and the added ones on one address."""

    name = "http"

    def __init__(self, host: str | None, port: int, registry: CollectorRegistry,
                 readiness: Callable[[], Readiness], *,
                 head_timeout: float = defaults.HTTP_HEAD_TIMEOUT_SECONDS,
                 idle_timeout: float = defaults.HTTP_IDLE_TIMEOUT_SECONDS,
                 max_connections: int = defaults.HTTP_MAX_CONNECTIONS,
                 probe_reserve: int = defaults.HTTP_PROBE_RESERVE,
                 metrics_reuse_seconds: float = defaults.HTTP_METRICS_REUSE_SECONDS) -> None:
        if not 0 <= probe_reserve < max_connections:
            raise ValueError("the probe reserve must be below the connection cap")
        self._head_timeout = head_timeout
        self._idle_timeout = idle_timeout
        self._max_connections = max_connections
        self._probe_reserve = probe_reserve
        self._host = host
        self._port = port
        self._registry_text = RegistryText(registry)
        self._readiness = readiness
        self._server: asyncio.base_events.Server | None = None
        self._sock: socket.socket | None = None
        self._connections: set[asyncio.Task] = set()
        self._routes: dict[str, RouteHandler] = {}
        self._metrics_text: list[tuple[MetricsText, bool]] = []
        self._metrics_parts: list[MetricsParts] = []
        # (path, gzip, openmetrics) -> the /metrics reply being rendered or just rendered
        self._renders: SharedRender[tuple[Reply, bool]] = SharedRender(metrics_reuse_seconds)
        self._route_answers: SharedRender[tuple[Reply, bool]] = SharedRender(0.0)

    def add_metrics_text(self, render: MetricsText, external: bool = False) -> None:
        """Append families to /metrics after the registry's (the registry's families are
        internal), and to /external-metrics when `external`, else to /internal-metrics.
        For exporters whose series are many: prometheus_client formats each sample slowly.
        `render(openmetrics)` runs in a worker thread at each scrape (reading shared state
        only), must not repeat a registry family, and must leave out OpenMetrics' `# EOF`."""
        self._metrics_text.append((render, external))

    def add_metrics_parts(self, render: MetricsParts) -> None:
        """Like add_metrics_text for an exporter with families on both sides: /metrics asks
        for both parts in one call (one pass over its objects), the two others for one."""
        self._metrics_parts.append(render)

    def add_route(self, path: str, handler: RouteHandler) -> None:
        """Serve GET/HEAD `path` with `handler`. Paths are exact; adding one twice is a bug."""
        if path in _BUILT_IN or path in self._routes or not path.startswith("/"):
            raise ValueError(f"route {path!r} is taken or not an absolute path")
        self._routes[path] = handler

    @property
    def bound_port(self) -> int | None:
        if self._sock is None:
            return None
        return int(self._sock.getsockname()[1])

    def bind(self) -> None:
        """Take the address now, before any other module starts (a port in use is found at
        once, exit 2); requests are served from start() on."""
        if self._sock is not None:
            return
        try:
            if self._host is None and socket.has_dualstack_ipv6():
                sock = socket.create_server(("", self._port), family=socket.AF_INET6, dualstack_ipv6=True)
            else:
                family = socket.AF_INET6 if self._host and ":" in self._host else socket.AF_INET
                sock = socket.create_server((self._host or "", self._port), family=family)
        except OSError as exc:
            why = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise StartupError(f"cannot listen on {self._host or '*'}:{self._port}: {why}", exit_code=2) from exc
        sock.set_inheritable(False)
        self._sock = sock

    async def start(self) -> None:
        self.bind()
        assert self._sock is not None
        self._server = await asyncio.start_server(self._serve_connection, sock=self._sock)
        log.info("http_listening", addr=[s.getsockname()[:2] for s in self._server.sockets])

    def unbind(self) -> None:
        """Let go of an address bound and never served (the daemon built, not started)."""
        if self._server is None and self._sock is not None:
            self._sock.close()
            self._sock = None

    async def stop(self) -> None:
        """Stop listening and close every client connection (their tasks end quietly)."""
        if self._server is None:
            self.unbind()
            return
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None
        self._sock = None

    @property
    def connections(self) -> int:
        return len(self._connections)

    def ready(self) -> bool:
        return self._server is not None

    def route(self, method: str, target: str, accept_gzip: bool, openmetrics: bool = False) -> tuple[Reply, bool]:
        """Answer one request. Returns the reply and whether its body is gzip-encoded."""
        path, _, query = target.partition("?")
        if method not in ("GET", "HEAD"):
            return Reply(405, b"method not allowed\n"), False
        scopes = METRICS_PATHS.get(path)
        if scopes is not None:
            return _maybe_gzip(self._exposition(*scopes, openmetrics), accept_gzip)
        if path == "/healthz":
            return Reply(200, b"ok\n"), False
        if path == "/readyz":
            state = self._readiness()
            answer: dict[str, object] = {"ready": state.ready}
            if not state.ready:
                answer["notReady"] = list(state.not_ready)
            if state.degraded:
                answer["degraded"] = dict(state.degraded)
            body = json.dumps(answer, separators=(",", ":")).encode() + b"\n"
            return Reply(200 if state.ready else 503, body, "application/json"), False
        handler = self._routes.get(path)
        if handler is None:
            return Reply(404, b"not found\n"), False
        try:
            reply = handler(query)
        except Exception as exc:  # a broken route must not take the endpoint down
            return _route_failed(path, exc), False
        if not isinstance(reply, Reply):  # an awaitable: only answer() can wait for it
            _close(reply)
            raise TypeError(f"route {path!r} answers asynchronously: use answer()")
        return _maybe_gzip(reply, accept_gzip)

    async def answer(self, method: str, target: str, accept_gzip: bool,
                     openmetrics: bool = False) -> tuple[Reply, bool]:
        """route()'s answer, with what could hold the loop for long done elsewhere: /metrics
        rendered in a worker thread, an added route's awaitable awaited, a large reply
        gzipped in a worker."""
        path, _, query = target.partition("?")
        handler = self._routes.get(path)
        if handler is None or method not in ("GET", "HEAD"):
            if path in METRICS_PATHS and method in ("GET", "HEAD") and (self._metrics_text or self._metrics_parts):
                # a large exposition (rendering and gzip take tens of ms) runs in a worker
                # thread so the loop keeps serving NRI calls and collectors meanwhile; scrapes
                # of the same kind at about the same time share one (shared_render.py)
                return await self._renders.get((path, accept_gzip, openmetrics), functools.partial(
                    render_in_worker, self.route, method, target, accept_gzip, openmetrics))
            return self.route(method, target, accept_gzip, openmetrics)
        # the same request at the same time (a client storm) is answered once, not reused after
        return await self._route_answers.get((path, query, accept_gzip), functools.partial(
            _answer_route, handler, path, query, accept_gzip))

    def _exposition(self, internal: bool, external: bool, openmetrics: bool) -> Reply:
        parts = []
        if internal:
            parts.append(self._registry_text.render(openmetrics))
        parts += [render(openmetrics) for render, is_external in self._metrics_text
                  if (external if is_external else internal)]
        for render in self._metrics_parts:
            pieces = render(openmetrics, internal, external)
            parts += [pieces] if isinstance(pieces, bytes) else pieces
        if openmetrics:
            parts.append(_OM_EOF)
        return Reply(200, tuple(parts), OPENMETRICS_CONTENT_TYPE if openmetrics else TEXT_CONTENT_TYPE)

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._connections) >= self._max_connections:
            writer.close()  # over the cap: not even a probe (the reserve is below it)
            return
        probes_only = len(self._connections) >= self._max_connections - self._probe_reserve
        self._connections.add(task)
        conn = h11.Connection(h11.SERVER)
        try:
            await self._conversation(conn, reader, writer, probes_only)
        except (ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # the endpoint is stopping: the connection just closes
        except h11.RemoteProtocolError as exc:
            log.debug("http_bad_request", error=str(exc)[:_QUOTED])
            await _try_send_error(conn, writer, exc.error_status_hint)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _conversation(self, conn: h11.Connection, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter, probes_only: bool) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._idle_timeout  # idle until a request's first byte
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return  # the head took too long, or the connection sat idle: close it
                data = await asyncio.wait_for(reader.read(_READ_CHUNK), remaining)
                if data and conn.their_state is h11.IDLE and not conn.trailing_data[0]:
                    deadline = min(deadline, loop.time() + self._head_timeout)
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                if _has_body(event) or (probes_only and _path(event) not in _PROBES):
                    await self._refuse(conn, writer, event, probes_only)
                    return
                await self._respond(conn, writer, event)
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    return
                if conn.their_state is h11.SEND_BODY:
                    conn.next_event()  # the (empty) EndOfMessage of a bodyless request
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
                deadline = loop.time() + self._idle_timeout
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return

    async def _refuse(self, conn: h11.Connection, writer: asyncio.StreamWriter, request: h11.Request,
                      probes_only: bool) -> None:
        """Answer without reading a body, then close: 405/413 for a body, 503 past the reserve."""
        if probes_only and not _has_body(request):
            status, body = 503, b"too many connections: only /healthz and /readyz are served\n"
        elif request.method in (b"GET", b"HEAD"):
            status, body = 413, b"no route takes a request body\n"
        else:
            status, body = 405, b"method not allowed\n"
        writer.write(conn.send(h11.Response(status_code=status, headers=[
            ("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(body))),
            ("connection", "close")])))
        writer.write(conn.send(h11.Data(data=body)))
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()

    async def _respond(self, conn: h11.Connection, writer: asyncio.StreamWriter, request: h11.Request) -> None:
        gzip_ok = b"gzip" in _header(request, b"accept-encoding")
        openmetrics = wants_openmetrics(_header(request, b"accept"))
        method, target = request.method.decode("ascii", "replace"), request.target.decode("ascii", "replace")
        reply, gzipped = await self.answer(method, target, gzip_ok, openmetrics)
        headers = [("content-type", reply.content_type), ("content-length", str(reply.length))]
        if gzipped:
            headers.append(("content-encoding", "gzip"))
        writer.write(conn.send(h11.Response(status_code=reply.status, headers=headers)))
        if request.method != b"HEAD":
            # a slice at a time, each once the last has mostly left: the transport never
            # buffers the body whole (one more multi-MB copy)
            for piece in _slices(reply.parts):
                writer.write(conn.send(h11.Data(data=piece)))
                await writer.drain()
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()


_OM_EOF = b"# EOF\n"
_GZIP_WBITS = 31  # zlib's window bits that ask for the gzip wrapper


def wants_openmetrics(accept: bytes) -> bool:
    """Whether an Accept header asks for OpenMetrics before (or instead of) the text format
    (Prometheus sends both, OpenMetrics first, unless configured otherwise)."""
    best_om = best_text = -1.0
    for item in accept.split(b","):
        media, *params = (part.strip() for part in item.split(b";"))
        quality = 1.0
        for param in params:
            key, _, value = param.partition(b"=")
            if key.strip() == b"q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if media == b"application/openmetrics-text":
            best_om = max(best_om, quality)
        elif media in (b"text/plain", b"*/*"):
            best_text = max(best_text, quality)
    return best_om > 0 and best_om >= best_text


@functools.cache
def gzip_module() -> ModuleType:
    """isal's zlib when installed (the `fast` extra): its level 1 packs a 3.5 MB exposition
    to the same size as zlib's level 1 in a third of the time (bench/metrics_gzip.py).
    Imported at the first compressed reply, so a daemon nobody scrapes does not load it."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib
    return isal_zlib


def gzip_parts(parts: tuple[bytes, ...], module: ModuleType | None = None) -> bytes:
    """The parts one after the other as one gzip body (`module`: a zlib-like module, by
    default gzip_module())."""
    module = module or gzip_module()
    packer = module.compressobj(defaults.HTTP_GZIP_LEVEL, module.DEFLATED, _GZIP_WBITS)
    # small parts (an object's PSI lines) gathered first: isal packs 4 MB in a thousand
    # parts in 4.1 ms of CPU, in 26 pieces of >= 64 KiB in 2.7 ms with the gathering
    packed = [packer.compress(piece) for piece in _gathered(parts)]
    packed.append(packer.flush())
    return b"".join(packed)


async def _answer_route(handler: RouteHandler, path: str, query: str, accept_gzip: bool) -> tuple[Reply, bool]:
    try:
        pending = handler(query)
        reply = pending if isinstance(pending, Reply) else await pending
    except Exception as exc:  # a broken route must not take the endpoint down
        return _route_failed(path, exc), False
    if _gzips(reply, accept_gzip):
        return await render_in_worker(_maybe_gzip, reply, accept_gzip)
    return reply, False


def _route_failed(path: str, exc: Exception) -> Reply:
    log.error("http_route_failed", path=path, error=repr(exc), exc_info=True)
    return Reply(500, b"internal error\n")


def _close(pending: object) -> None:
    """Close a coroutine that will never be awaited (no 'never awaited' warning)."""
    close = getattr(pending, "close", None)
    if callable(close):
        close()


def _gzips(reply: Reply, accept_gzip: bool) -> bool:
    return accept_gzip and reply.length >= defaults.HTTP_GZIP_MIN_BYTES


def _maybe_gzip(reply: Reply, accept_gzip: bool) -> tuple[Reply, bool]:
    if _gzips(reply, accept_gzip):
        return Reply(reply.status, gzip_parts(reply.parts), reply.content_type), True
    return reply, False


def _slices(parts: tuple[bytes, ...]) -> Iterator[bytes]:
    """The parts as writes of about _WRITE_CHUNK: small ones gathered, large ones cut."""
    for piece in _gathered(parts):
        for start in range(0, len(piece), _WRITE_CHUNK):
            yield piece[start:start + _WRITE_CHUNK]  # the piece itself when it is no longer


def _gathered(parts: tuple[bytes, ...]) -> Iterator[bytes]:
    """The parts in order, each run of small ones joined up to _WRITE_CHUNK or a little past
    it, large ones as they are."""
    batch: list[bytes] = []
    size = 0
    for part in parts:
        if len(part) >= _WRITE_CHUNK:
            if batch:
                yield b"".join(batch)
                batch, size = [], 0
            yield part
            continue
        batch.append(part)
        size += len(part)
        if size >= _WRITE_CHUNK:
            yield b"".join(batch)
            batch, size = [], 0
    if batch:
        yield b"".join(batch)


def _header(request: h11.Request, name: bytes) -> bytes:
    return b",".join(value for key, value in request.headers if key == name)


def _has_body(request: h11.Request) -> bool:
    length = _header(request, b"content-length")
    return bool(_header(request, b"transfer-encoding")) or (bool(length) and length.strip() != b"0")


def _path(request: h11.Request) -> str:
    return request.target.decode("ascii", "replace").partition("?")[0]


async def _try_send_error(conn: h11.Connection, writer: asyncio.StreamWriter, status: int) -> None:
    if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        return
    body = b"bad request\n"
    try:
        writer.write(conn.send(h11.Response(status_code=status, headers=[
            ("content-length", str(len(body))), ("connection", "close")])))
        writer.write(conn.send(h11.Data(data=body)))
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()
    except (h11.LocalProtocolError, ConnectionError):
        pass
