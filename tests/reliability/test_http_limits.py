"""The HTTP endpoint under hostile clients: trickled heads, idle keep-alives, more
connections than the cap (probes still answer), bodies it never reads, and a stop with
clients connected that ends quietly."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from koordlet.agent import Readiness
from koordlet.server.http_endpoint import HttpEndpoint
from tests.polling import until


@pytest.fixture
async def endpoint():
    http = HttpEndpoint("127.0.0.1", 0, CollectorRegistry(), lambda: Readiness(()), head_timeout=0.3,
                        idle_timeout=0.5, max_connections=6, probe_reserve=2)
    await http.start()
    yield http
    await http.stop()


async def connect(http: HttpEndpoint):
    return await asyncio.open_connection("127.0.0.1", http.bound_port)


async def get(http: HttpEndpoint, path: str) -> tuple[int, bytes]:
    reader, writer = await connect(http)
    writer.write(f"GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".encode())
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


async def closed(reader: asyncio.StreamReader) -> bool:
    """Whether the server closed the connection (EOF), waiting up to a generous bound."""
    try:
        return await asyncio.wait_for(reader.read(), 10) is not None
    except (ConnectionError, asyncio.TimeoutError):
        return False


async def test_a_trickled_request_head_is_cut_off_at_the_head_deadline(endpoint):
    reader, writer = await connect(endpoint)
    trickle = b"GET /metrics HTTP/1.1\r\nhost: x\r\n"
    for byte in trickle:  # one byte at a time, each well inside the idle timeout
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0.02)
        if reader.at_eof():
            break
    assert await closed(reader)
    await until(lambda: endpoint.connections == 0)
    writer.close()


async def test_an_idle_keep_alive_connection_is_closed(endpoint):
    reader, writer = await connect(endpoint)
    writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")  # keep-alive
    await writer.drain()
    assert (await reader.readuntil(b"ok\n")).startswith(b"HTTP/1.1 200")
    assert await closed(reader)  # nothing more sent: closed after the idle timeout
    writer.close()


async def test_past_the_reserve_only_probes_answer_and_past_the_cap_nothing_is_held(endpoint):
    holders = []
    for _ in range(4):  # fill up to the reserve with silent connections
        holders.append(await connect(endpoint))
    await until(lambda: endpoint.connections == 4)
    assert await get(endpoint, "/healthz") == (200, b"ok\n")
    assert (await get(endpoint, "/readyz"))[0] == 200
    status, _ = await get(endpoint, "/metrics")
    assert status == 503
    for _ in range(4):  # beyond the cap
        holders.append(await connect(endpoint))
    await until(lambda: endpoint.connections <= 6)
    assert endpoint.connections <= 6
    for _, writer in holders:
        writer.close()


@pytest.mark.parametrize("method, status", [("POST", 405), ("GET", 413)])
async def test_a_request_body_is_never_read(endpoint, method, status):
    reader, writer = await connect(endpoint)
    writer.write(f"{method} /metrics HTTP/1.1\r\nhost: x\r\ncontent-length: 6000000000\r\n\r\n".encode())
    writer.write(b"x" * 65536)  # the start of a body the endpoint must not wait for
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 10)
    assert raw.startswith(f"HTTP/1.1 {status}".encode()) and b"connection: close" in raw.lower()
    writer.close()


async def test_stopping_with_clients_connected_logs_no_traceback():
    http = HttpEndpoint("127.0.0.1", 0, CollectorRegistry(), lambda: Readiness(()))
    await http.start()
    clients = [await connect(http) for _ in range(20)]
    for _, writer in clients[:10]:
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")  # keep-alive, held open
        await writer.drain()
    await until(lambda: http.connections == 20)
    with capture_logs() as logs:
        await http.stop()
    assert http.connections == 0
    assert [entry for entry in logs if entry.get("log_level") in ("error", "critical") or "exc_info" in entry] == []
    for _, writer in clients:
        writer.close()
