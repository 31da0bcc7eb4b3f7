"""/metrics figures: koordlet's names and labels, live objects only, text that parses."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.collectors.psi import LABELS
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.metricsadvisor.framework import CollectorStats
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.metricsadvisor.fixtures import make_pod

NOW = 1_700_000_000.0


def scrape(registry: CollectorRegistry) -> dict[str, list]:
    text = generate_latest(registry).decode()
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
        Sample(SeriesKey(Metric.POD_PSI.value, "u1", "", LABELS[("memory", "some", "avg10")]), NOW, 2.5),
        Sample(SeriesKey(Metric.POD_PSI.value, "u1", "", LABELS[("cpu", "some", "avg10")]), NOW, 1.0),
    ])
    stats = {"podresource": CollectorStats(runs=3, errors=1, total_cpu_seconds=0.01)}
    registry = CollectorRegistry()
    registry.register(AdvisorExporter(store, states, "node-a", lambda: stats, clock=lambda: NOW + 1))
    return store, states, registry, pod


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
    assert psi[("cpu", "avg10", "some")].labels["cpu_full_supported"] == "false"
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
    registry = CollectorRegistry()
    registry.register(AdvisorExporter(store, None, "node-a", clock=lambda: NOW))
    assert "koordlet_node_used_cpu_cores" not in scrape(registry)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian package prometheus)")
def test_promtool_finds_no_lint_problems():
    _, _, registry, _ = setup_node()
    result = subprocess.run(["promtool", "check", "metrics"], input=generate_latest(registry),
                            capture_output=True, timeout=30)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
