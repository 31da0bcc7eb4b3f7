"""/metrics over a socket: a body of several MB in many pieces, written in slices, arrives
whole (plain and gzip), its length as announced, HEAD without it; scrapes at once share a render."""

from __future__ import annotations

import asyncio
import gzip
import sys
import threading

from prometheus_client import CollectorRegistry, Gauge

from koordlet.agent import Readiness
from koordlet.config import defaults
from koordlet.server.http_endpoint import HttpEndpoint
from tests.polling import until


async def request(port: int | None, head: bytes) -> tuple[bytes, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)
    response = await reader.read()
    writer.close()
    status_and_headers, _, body = response.partition(b"\r\n\r\n")
    return status_and_headers.lower(), body


async def test_a_body_of_megabytes_arrives_whole_plain_gzipped_and_not_for_head():
    registry = CollectorRegistry()
    gauge = Gauge("test_series", "many series", ["i"], registry=registry)
    for i in range(300):
        gauge.labels(i=str(i)).set(i)
    # an exporter's pieces: many small ones (a pod's block) and one of ~4 MB
    small = [b'test_small{pod="%d"} 1.0\n' % i for i in range(20_000)]
    big = b"".join(b'test_big{pod="%d"} %d.5\n' % (i, i) for i in range(150_000))
    pieces = [b"# TYPE test_small gauge\n", *small, b"# TYPE test_big gauge\n", big]
    endpoint = HttpEndpoint("127.0.0.1", 0, registry, lambda: Readiness(()))
    endpoint.add_metrics_parts(lambda om, internal, external: pieces if external else [])
    await endpoint.start()
    try:
        expected = endpoint.route("GET", "/metrics", False)[0].body
        assert len(expected) > 4_000_000 and expected.endswith(b"".join(pieces))
        head, plain = await request(endpoint.bound_port, b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        assert head.startswith(b"http/1.1 200") and b"content-length: %d" % len(expected) in head
        assert plain == expected
        head, packed = await request(endpoint.bound_port, b"GET /metrics HTTP/1.1\r\nhost: x\r\n"
                                     b"accept-encoding: gzip\r\nconnection: close\r\n\r\n")
        assert b"content-encoding: gzip" in head and b"content-length: %d" % len(packed) in head
        assert gzip.decompress(packed) == expected
        head, nothing = await request(endpoint.bound_port, b"HEAD /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        assert b"content-length: %d" % len(expected) in head and nothing == b""
    finally:
        await endpoint.stop()


async def test_a_served_render_runs_with_the_lowered_switch_interval_and_restores_it():
    seen: list[float] = []

    def render(om, internal, external):
        seen.append(sys.getswitchinterval())
        return [b"test_one 1.0\n"]

    endpoint = HttpEndpoint("127.0.0.1", 0, CollectorRegistry(), lambda: Readiness(()))
    endpoint.add_metrics_parts(render)
    before = sys.getswitchinterval()
    await endpoint.start()
    try:
        head, body = await request(endpoint.bound_port, b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
    finally:
        await endpoint.stop()
    assert head.startswith(b"http/1.1 200") and body.endswith(b"test_one 1.0\n")
    assert seen == [min(before, defaults.RENDER_SWITCH_INTERVAL_SECONDS)]
    assert sys.getswitchinterval() == before


async def test_scrapes_at_once_share_one_render_and_another_kind_renders_its_own():
    calls = 0
    release = threading.Event()

    def render(om, internal, external):
        nonlocal calls
        calls += 1
        release.wait(30)
        return [b"test_render %d.0\n" % calls] * 400  # over the gzip threshold

    endpoint = HttpEndpoint("127.0.0.1", 0, CollectorRegistry(), lambda: Readiness(()), metrics_reuse_seconds=60.0)
    endpoint.add_metrics_parts(render)
    await endpoint.start()
    plain = b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    packed = b"GET /metrics HTTP/1.1\r\nhost: x\r\naccept-encoding: gzip\r\nconnection: close\r\n\r\n"
    try:
        storm = [asyncio.ensure_future(request(endpoint.bound_port, plain)) for _ in range(8)]
        await until(lambda: calls == 1)
        release.set()
        bodies = {body for _, body in await asyncio.gather(*storm)}
        assert bodies == {b"test_render 1.0\n" * 400} and calls == 1
        head, body = await request(endpoint.bound_port, packed)
        assert b"content-encoding: gzip" in head and gzip.decompress(body) == b"test_render 2.0\n" * 400
        assert calls == 2
    finally:
        await endpoint.stop()


async def test_an_address_bound_and_never_served_is_let_go_at_stop():
    endpoint = HttpEndpoint("127.0.0.1", 0, CollectorRegistry(), lambda: Readiness(()))
    endpoint.bind()  # as the daemon's build does, before any module starts
    port = endpoint.bound_port
    assert port is not None
    await endpoint.stop()  # a start that failed in another module: this one never served
    assert endpoint.bound_port is None
    again = HttpEndpoint("127.0.0.1", port, CollectorRegistry(), lambda: Readiness(()))
    again.bind()  # the port is free again (a listening socket left open would refuse this)
    again.unbind()
    assert again.bound_port is None
