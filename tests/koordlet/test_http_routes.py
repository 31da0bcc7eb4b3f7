"""HttpEndpoint.route: the answer for each path, without a socket."""

from __future__ import annotations

import asyncio
import gc
import gzip
import json
import sys
import warnings
import zlib

import pytest
from prometheus_client import CollectorRegistry, Gauge

from koordlet.agent import Readiness
from koordlet.config import defaults
from koordlet.server import http_endpoint
from koordlet.server.http_endpoint import HttpEndpoint, json_reply
from koordlet.util.json_text import canonical_json
from tests.polling import LoopTurns, until


def endpoint(registry=None, not_ready=()):
    return HttpEndpoint("127.0.0.1", 0, registry or CollectorRegistry(), lambda: Readiness(tuple(not_ready)))


def big_registry(series: int) -> CollectorRegistry:
    registry = CollectorRegistry()
    gauge = Gauge("test_series", "many series", ["i"], registry=registry)
    for i in range(series):
        gauge.labels(i=str(i)).set(i)
    return registry


def test_readyz_names_the_modules_not_ready_with_503():
    reply, _ = endpoint(not_ready=("nri", "reconciler")).route("GET", "/readyz", False)
    assert reply.status == 503
    assert json.loads(reply.body) == {"ready": False, "notReady": ["nri", "reconciler"]}


def test_large_metrics_payload_is_gzipped_only_when_accepted():
    ep = endpoint(big_registry(500))
    plain, plain_gz = ep.route("GET", "/metrics", False)
    packed, packed_gz = ep.route("GET", "/metrics", True)
    assert len(plain.body) >= defaults.HTTP_GZIP_MIN_BYTES
    assert (plain_gz, packed_gz) == (False, True)
    assert gzip.decompress(packed.body) == plain.body


@pytest.mark.parametrize("isal", [True, False], ids=["isal", "zlib"])
def test_the_gzip_body_is_the_same_text_with_isal_and_without(monkeypatch, isal):
    if isal:
        isal_zlib = pytest.importorskip("isal.isal_zlib")
    else:  # isal not installed: the stdlib's zlib packs it
        monkeypatch.setitem(sys.modules, "isal", None)
    http_endpoint.gzip_module.cache_clear()
    try:
        assert http_endpoint.gzip_module() is (isal_zlib if isal else zlib)
        ep = endpoint(big_registry(2000))
        plain, _ = ep.route("GET", "/metrics", False)
        packed, gzipped = ep.route("GET", "/metrics", True)
        assert gzipped and gzip.decompress(packed.body) == plain.body
        assert len(packed.body) < len(plain.body) // 4
    finally:
        http_endpoint.gzip_module.cache_clear()


def test_small_metrics_payload_is_not_compressed():
    ep = endpoint(big_registry(1))
    reply, gzipped = ep.route("GET", "/metrics", True)
    assert not gzipped
    assert b'test_series{i="0"} 0.0' in reply.body


def test_query_string_is_ignored_for_routing():
    assert endpoint().route("GET", "/healthz?verbose=1", False)[0].status == 200


def test_head_is_allowed_and_other_methods_are_not():
    ep = endpoint()
    assert ep.route("HEAD", "/healthz", False)[0].status == 200
    assert ep.route("DELETE", "/healthz", False)[0].status == 405


def test_added_route_gets_its_query_string_and_answers_json():
    ep = endpoint()
    seen = []
    ep.add_route("/api/v1/things", lambda query: (seen.append(query), json_reply({"n": 2}))[1])
    reply, gzipped = ep.route("GET", "/api/v1/things?qos=BE", False)
    assert (reply.status, reply.content_type, json.loads(reply.body), gzipped) == (
        200, "application/json", {"n": 2}, False)
    assert seen == ["qos=BE"]


def test_added_route_cannot_shadow_a_built_in_or_be_added_twice():
    ep = endpoint()
    ep.add_route("/x", lambda query: json_reply({}))
    for path in ("/metrics", "/x", "relative"):
        with pytest.raises(ValueError):
            ep.add_route(path, lambda query: json_reply({}))


def test_a_failing_route_answers_500_and_the_endpoint_keeps_serving():
    ep = endpoint()

    def broken(query: str):
        raise RuntimeError("bug")

    ep.add_route("/broken", broken)
    assert ep.route("GET", "/broken", False)[0].status == 500
    assert ep.route("GET", "/healthz", False)[0].status == 200


def test_large_route_replies_are_gzipped_when_accepted():
    ep = endpoint()
    ep.add_route("/big", lambda query: json_reply(list(range(5000))))
    reply, gzipped = ep.route("GET", "/big", True)
    assert gzipped and json.loads(gzip.decompress(reply.body)) == list(range(5000))


async def test_an_awaitable_route_is_answered_with_the_loop_free_while_it_works(monkeypatch):
    ep = endpoint()

    async def stepped(query: str):
        for _ in range(5):  # work in steps that yield, as a route whose document grows with the pods
            await asyncio.sleep(0)
        return await http_endpoint.json_reply_in_worker({"query": query, "items": list(range(5000))})

    workers = []
    real = http_endpoint.render_in_worker
    monkeypatch.setattr(http_endpoint, "render_in_worker", lambda fn, *a: workers.append(fn) or real(fn, *a))
    ep.add_route("/stepped", stepped)
    async with LoopTurns() as turns:
        reply, gzipped = await ep.answer("GET", "/stepped?x=1", True)
    assert reply.status == 200 and gzipped
    assert json.loads(gzip.decompress(reply.body)) == {"query": "x=1", "items": list(range(5000))}
    assert turns.count >= 5  # the other task ran at every step
    # the encoding and the gzip of the large reply went to worker threads
    assert workers == [canonical_json, http_endpoint._maybe_gzip]
    plain, gzipped = await ep.answer("GET", "/stepped?x=1", False)
    assert not gzipped and plain.body == json_reply({"query": "x=1", "items": list(range(5000))}).body


async def test_the_same_route_asked_at_once_is_answered_once_and_asked_again_afresh():
    ep = endpoint()
    gate = asyncio.Event()
    queries: list[str] = []

    async def counted(query: str):
        queries.append(query)
        await gate.wait()
        return json_reply({"answer": len(queries)})

    ep.add_route("/counted", counted)
    same = [asyncio.ensure_future(ep.answer("GET", "/counted?a=1", False)) for _ in range(4)]
    other = asyncio.ensure_future(ep.answer("GET", "/counted?a=2", False))
    await until(lambda: len(queries) == 2)
    gate.set()
    assert {reply.body for reply, _ in await asyncio.gather(*same)} == {json_reply({"answer": 2}).body}
    assert (await other)[0].body == json_reply({"answer": 2}).body
    assert queries == ["a=1", "a=2"]
    reply, _ = await ep.answer("GET", "/counted?a=1", False)  # after it: asked again, nothing reused
    assert reply.body == json_reply({"answer": 3}).body


async def test_an_awaitable_route_that_fails_answers_500_and_route_refuses_it():
    ep = endpoint()

    async def broken(query: str):
        await asyncio.sleep(0)
        raise RuntimeError("bug")

    ep.add_route("/broken", broken)
    reply, _ = await ep.answer("GET", "/broken", False)
    assert reply.status == 500
    assert (await ep.answer("POST", "/broken", False))[0].status == 405
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine left unawaited would warn
        with pytest.raises(TypeError, match="answer"):
            ep.route("GET", "/broken", False)
        gc.collect()


def exposition_endpoint():
    from prometheus_client import Counter

    from koordlet.metrics.go_counter import GoCounter, render_counters

    registry = CollectorRegistry()
    Counter("koordlet_test_writes", "writes", registry=registry).inc()
    evictions = GoCounter("koordlet_pod_eviction", "evictions", ("node", "reason"))
    evictions.inc("n1", "BEMemoryEvict")
    ep = endpoint(registry)
    ep.add_metrics_text(lambda om: render_counters((evictions,), om))
    ep.add_metrics_text(lambda om: b"# HELP koordlet_container_cpi cpi\n# TYPE koordlet_container_cpi gauge\n"
                                   b'koordlet_container_cpi{cpi_field="cycles"} 1.0\n', external=True)
    return ep


def test_internal_and_external_metrics_are_split_and_metrics_has_both():
    ep = exposition_endpoint()
    internal = ep.route("GET", "/internal-metrics", False)[0].body
    external = ep.route("GET", "/external-metrics", False)[0].body
    everything = ep.route("GET", "/metrics", False)[0].body
    assert b"koordlet_test_writes_total 1.0" in internal and b"koordlet_container_cpi" not in internal
    assert b"koordlet_container_cpi" in external and b"koordlet_test_writes" not in external
    assert b"koordlet_container_cpi" in everything and b'koordlet_pod_eviction{node="n1"' in everything


def test_no_created_series_as_go_clients_emit_none():
    assert b"_created" not in exposition_endpoint().route("GET", "/metrics", False)[0].body


@pytest.mark.parametrize("accept, openmetrics", [
    (b"application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", True),
    (b"text/plain;version=0.0.4", False),
    (b"", False),
    (b"application/openmetrics-text;q=0.2,text/plain;q=0.9", False),
])
def test_openmetrics_is_negotiated_through_accept(accept, openmetrics):
    from koordlet.server.http_endpoint import wants_openmetrics
    assert wants_openmetrics(accept) is openmetrics


def test_openmetrics_exposition_parses_and_names_go_counters_unknown():
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    reply, _ = exposition_endpoint().route("GET", "/metrics", False, openmetrics=True)
    assert reply.content_type.startswith("application/openmetrics-text")
    families = {f.name: f for f in text_string_to_metric_families(reply.body.decode())}  # raises if invalid
    assert families["koordlet_test_writes"].type == "counter"
    assert families["koordlet_pod_eviction"].type == "unknown"
    assert reply.body.endswith(b"# EOF\n") and reply.body.count(b"# EOF") == 1


def mixed_parts() -> tuple[bytes, ...]:
    """What /metrics' pieces look like: runs of small blocks (an object's PSI lines), empty
    ones, and blocks larger than a write (the request and limit lines)."""
    small = [b"pod_psi{pod=\"%d\"} 0.%d\n" % (i, i) for i in range(5000)]
    large = [bytes(range(256)) * (1 + http_endpoint._WRITE_CHUNK // 256 * k) for k in (1, 3)]
    return tuple([b"# HELP x\n", b"", *small[:2500], large[0], large[1], b"", *small[2500:], large[0]])


def test_the_gzip_body_of_many_parts_is_their_text_in_order():
    parts = mixed_parts()
    assert gzip.decompress(http_endpoint.gzip_parts(parts)) == b"".join(parts)


def test_the_writes_are_the_parts_in_order_none_past_a_write_chunk():
    parts = mixed_parts()
    slices = list(http_endpoint._slices(parts))
    assert b"".join(slices) == b"".join(parts)
    assert all(0 < len(piece) <= http_endpoint._WRITE_CHUNK for piece in slices)
    assert len(slices) <= len(b"".join(parts)) // http_endpoint._WRITE_CHUNK + 6
