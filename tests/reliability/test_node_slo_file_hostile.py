"""--node-slo-config holding something hostile: a huge file, an alias bomb, bytes that are
not UTF-8, a FIFO, an empty document. Each is refused with a bounded reason, the last good
NodeSLO stays, the refusal is counted, and the watcher keeps taking later good edits."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from prometheus_client import CollectorRegistry

from koordlet.config import defaults
from koordlet.slo.source import NodeSLOFile
from tests.koordlet.slo.test_node_slo_file import write
from tests.polling import until

GOOD = "resourceUsedThresholdWithBE: {enable: true, cpuSuppressThresholdPercent: 55}\n"
BOMB = "".join(f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join(["*" + chr(96 + i)] * 9 if i else ['"lol"'] * 9) + "]\n"
               for i in range(9))


async def source_after_good(path) -> tuple[NodeSLOFile, CollectorRegistry]:
    write(path, GOOD)
    source = NodeSLOFile(path, poll_interval=0.01)
    registry = CollectorRegistry()
    source.count_refusals_on(registry)
    await source.start()
    assert source.current().resource_used_threshold_with_be.cpu_suppress_threshold_percent == 55
    return source, registry


async def refused(source: NodeSLOFile, registry: CollectorRegistry, before: int) -> str:
    await until(lambda: source.refusals > before)
    assert source.current().resource_used_threshold_with_be.cpu_suppress_threshold_percent == 55  # last good
    assert registry.get_sample_value("koordlet_node_slo_refused_total") == source.refusals
    assert source.last_error is not None and len(source.last_error) <= defaults.NODE_SLO_ERROR_CHARS
    return source.last_error


@pytest.mark.parametrize("content, reason", [
    (b"a: 1\n" + b"#" * (defaults.NODE_SLO_MAX_BYTES + 10), "more than the"),
    (BOMB.encode(), "expands to more than"),
    (b"resourceUsedThresholdWithBE: {enable: \xff\xfe}\n", "not UTF-8"),
    (b"", "is empty"),
    (b"# only a comment\n", "is empty"),
    (b"null\n", "is empty"),
])
async def test_a_hostile_document_is_refused_and_a_later_good_edit_is_taken(tmp_path, content, reason):
    path = tmp_path / "nodeslo.yaml"
    source, registry = await source_after_good(path)
    try:
        path.write_bytes(content)
        os.utime(path, ns=(1, 10**18))  # looks changed whatever the size
        assert reason in await refused(source, registry, 0)
        write(path, GOOD.replace("55", "44"), 7)
        await until(lambda: source.current().resource_used_threshold_with_be.cpu_suppress_threshold_percent == 44)
        assert source.last_error is None and source.ready()
    finally:
        await source.stop()


async def test_a_fifo_at_the_path_is_refused_without_blocking(tmp_path):
    path = tmp_path / "nodeslo.yaml"
    source, registry = await source_after_good(path)
    try:
        path.unlink()
        os.mkfifo(path)
        assert "not a regular file" in await refused(source, registry, 0)
        path.unlink()
        write(path, GOOD.replace("55", "33"), 3)
        await until(lambda: source.current().resource_used_threshold_with_be.cpu_suppress_threshold_percent == 33)
    finally:
        await source.stop()


async def test_the_route_answers_a_bounded_reason(tmp_path):
    from koordlet.agent import Readiness
    from koordlet.daemon.cli import parse_args
    from koordlet.server.http_endpoint import HttpEndpoint
    from koordlet.slo.agent import SPEC as NODE_SLO
    from tests.koordlet.hubs_helper import hubs_for

    path = tmp_path / "slo.yaml"
    path.write_text(BOMB)
    http = HttpEndpoint("127.0.0.1", 0, CollectorRegistry(), lambda: Readiness(()))
    hubs = hubs_for(parse_args(["--node-slo-config", str(path), "--state-dir", str(tmp_path)]), http=http)
    (source,) = NODE_SLO.build(hubs).modules
    await source.start()
    try:
        reply, _ = http.route("GET", "/api/v1/nodeslo", False)
        assert len(reply.body) < 8192
        assert "expands" in json.loads(reply.body)["lastError"]
    finally:
        await source.stop()
    await asyncio.sleep(0)
