"""/metrics figures: koordlet's names and labels, live objects only, text that parses."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metrics.text import escape, number
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.metricsadvisor.framework import CollectorStats
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.metricsadvisor.fixtures import make_pod

NOW = 1_700_000_000.0


def scrape(exporter: AdvisorExporter) -> dict[str, list]:
    text = (exporter.render() + exporter.render_external()).decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def setup_node():
    store = MetricStore()
    pod = make_pod("u1")
    states = StaticStates(NodeInfo("node-a"), [pod])
    cid = pod.containers[0].id
    store.append([
        Sample(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), NOW, 1.25),
        Sample(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "u1"), NOW, 0.5),
        Sample(SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, "u1", cid), NOW, 4096.0),
        Sample(SeriesKey.of(Metric.CONTAINER_CPU_CYCLES, "u1", cid), NOW, 3000.0),
        Sample(SeriesKey.of(Metric.CONTAINER_INSTRUCTIONS, "u1", cid), NOW, 1000.0),
        Sample(SeriesKey.of(Metric.NODE_NETWORK_BYTES_PER_SECOND, interface="eth0", direction="rx"), NOW, 2000.0),
    ])
    psi = {("u1", ""): {"cpu": ((1.0, 0.5, 0.25), None),
                        "memory": ((2.5, 2.0, 1.5), (0.5, 0.25, 0.125))}}
    stats = {"podresource": CollectorStats(runs=3, errors=1, total_cpu_seconds=0.01)}
    exporter = AdvisorExporter(store, states, "node-a", lambda: stats, clock=lambda: NOW + 1, psi=lambda: psi)
    return store, states, exporter, pod


def test_names_and_labels_follow_koordlet():
    _, _, registry, pod = setup_node()
    families = scrape(registry)
    cid = pod.containers[0].id
    [node_cpu] = families["koordlet_node_used_cpu_cores"]
    assert node_cpu.labels == {"node": "node-a"} and node_cpu.value == 1.25
    [pod_cpu] = families["koordlet_pod_used_cpu_cores"]
    assert pod_cpu.labels == {"node": "node-a", "pod_uid": "u1", "pod_name": "pod-u1", "pod_namespace": "default"}
    cpi = {s.labels["cpi_field"]: s.value for s in families["koordlet_container_cpi"]}
    assert cpi == {"cycles": 3000.0, "instructions": 1000.0}  # not swapped (koordlet v1.1 bug)
    assert {s.labels["container_id"] for s in families["koordlet_container_cpi"]} == {cid}
    psi = {(s.labels["psi_resource_type"], s.labels["psi_precision"], s.labels["psi_degree"]): s
           for s in families["koordlet_pod_psi"]}
    assert psi[("mem", "avg10", "some")].value == 2.5  # koordlet spells memory "mem"
    assert psi[("mem", "avg300", "full")].value == 0.125
    assert psi[("cpu", "avg60", "some")].labels["cpu_full_supported"] == "false"
    assert ("cpu", "avg10", "full") not in psi and len(psi) == 9  # cpu some x3, mem some+full x3
    [net] = families["koordlet_node_network_bytes_per_second"]
    assert net.labels == {"node": "node-a", "interface": "eth0", "direction": "rx"} and net.value == 2000.0
    runs = {s.name: s.value for s in families["koordlet_collector_runs"]}
    assert runs == {"koordlet_collector_runs_total": 3.0}


def test_a_deleted_pod_disappears_from_the_next_scrape():
    store, states, registry, _ = setup_node()
    assert "koordlet_pod_used_cpu_cores" in scrape(registry)
    states.remove("u1")
    store.forget_pod("u1")
    families = scrape(registry)
    assert not any(name.startswith(("koordlet_pod_", "koordlet_container_")) for name in families)
    assert "koordlet_node_used_cpu_cores" in families


def test_stale_samples_are_left_out():
    store = MetricStore()
    store.append([Sample(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), NOW - 600, 1.0)])
    assert "koordlet_node_used_cpu_cores" not in scrape(AdvisorExporter(store, None, "node-a", clock=lambda: NOW))


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian package prometheus)")
def test_promtool_finds_no_lint_problems():
    _, _, registry, _ = setup_node()
    result = subprocess.run(["promtool", "check", "metrics"], input=registry.render() + registry.render_external(),
                            capture_output=True, timeout=30)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()


def test_label_values_are_escaped_and_values_spelled_as_go_reads_them():
    assert escape('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    assert escape("plain-name") == "plain-name"
    assert [number(v) for v in (1.5, 3000.0, float("inf"), float("-inf"))] == ["1.5", "3000.0", "+Inf", "-Inf"]
    assert number(float("nan")) == "NaN"


async def test_the_http_endpoint_appends_the_exporter_text_to_metrics():
    from prometheus_client import CollectorRegistry

    from koordlet.agent import Readiness
    from koordlet.server.http_endpoint import HttpEndpoint

    _, _, exporter, _ = setup_node()
    endpoint = HttpEndpoint("127.0.0.1", 0, CollectorRegistry(), lambda: Readiness(()))
    endpoint.add_metrics_text(exporter.render)
    endpoint.add_metrics_text(exporter.render_external, external=True)
    await endpoint.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", endpoint.bound_port)
        writer.write(b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        response = await reader.read()
        writer.close()
    finally:
        await endpoint.stop()
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    families = {f.name for f in text_string_to_metric_families(body.decode())}
    assert {"koordlet_pod_used_cpu_cores", "koordlet_container_cpi"} <= families
