"""/metrics figures: koordlet's names and labels, live objects only, text that parses."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil

import pytest
from prometheus_client.parser import text_string_to_metric_families

from koordlet.config.errors import ConfigError
from koordlet.daemon.cli import parse_args
from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metrics.text import escape, number
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.metricsadvisor.framework import CollectorStats
from koordlet.metricsadvisor.options import AdvisorOptions
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.metricsadvisor.fixtures import make_pod
from tests.promtool import promtool_problems

NOW = 1_700_000_000.0


def scrape(exporter: AdvisorExporter) -> dict[str, list]:
    text = b"".join(exporter.render_parts(False, True, True)).decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def setup_node(container_series: bool = False, psi_precisions: tuple[str, ...] = ("avg10",)):
    store = MetricStore()
    pod = make_pod("u1")
    states = StaticStates(NodeInfo("node-a"), [pod])
    cid = pod.containers[0].id
    store.append([
        Sample(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), NOW, 1.25),
        Sample(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "u1"), NOW, 0.5),
        Sample(SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, "u1"), NOW, 8192.0),
        Sample(SeriesKey.of(Metric.POD_CPU_THROTTLED_RATIO, "u1"), NOW, 0.0),
        Sample(SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "u1", cid), NOW, 0.25),
        Sample(SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, "u1", cid), NOW, 4096.0),
        Sample(SeriesKey.of(Metric.CONTAINER_CPU_THROTTLED_RATIO, "u1", cid), NOW, 0.5),
        Sample(SeriesKey.of(Metric.CONTAINER_CPU_CYCLES, "u1", cid), NOW, 3000.0),
        Sample(SeriesKey.of(Metric.CONTAINER_INSTRUCTIONS, "u1", cid), NOW, 1000.0),
        Sample(SeriesKey.of(Metric.NODE_NETWORK_BYTES_PER_SECOND, interface="eth0", direction="rx"), NOW, 2000.0),
    ])
    psi = {("u1", ""): {"cpu": ((1.0, 0.5, 0.25), None),
                        "memory": ((2.5, 2.0, 1.5), (0.5, 0.25, 0.125))},
           ("u1", cid): {"cpu": ((0.5, 0.5, 0.5), None)}}
    stats = {"podresource": CollectorStats(runs=3, errors=1, total_cpu_seconds=0.01)}
    exporter = AdvisorExporter(store, states, "node-a", lambda: stats, clock=lambda: NOW + 1, psi=lambda: psi,
                               container_series=container_series, psi_precisions=psi_precisions)
    return store, states, exporter, pod


POD_LEVEL = {"koordlet_node_used_cpu_cores", "koordlet_node_network_bytes_per_second",
             "koordlet_pod_used_cpu_cores", "koordlet_pod_used_memory_bytes", "koordlet_pod_cpu_throttled_ratio",
             "koordlet_pod_psi", "koordlet_container_cpi", "koordlet_collector_runs", "koordlet_collector_errors",
             "koordlet_collector_cpu_seconds", "koordlet_collector_last_run_duration_seconds"}
CONTAINER_LEVEL = {"koordlet_container_used_cpu_cores", "koordlet_container_used_memory_bytes",
                   "koordlet_container_cpu_throttled_ratio", "koordlet_container_psi"}


def test_the_default_level_exports_pods_not_containers_usage_or_psi():
    _, _, exporter, _ = setup_node()
    assert set(scrape(exporter)) == POD_LEVEL


def test_the_flag_adds_the_container_series():
    _, _, exporter, pod = setup_node(container_series=True)
    families = scrape(exporter)
    assert set(families) == POD_LEVEL | CONTAINER_LEVEL
    [ctr_cpu] = families["koordlet_container_used_cpu_cores"]
    assert ctr_cpu.labels == {"node": "node-a", "container_id": pod.containers[0].id, "container_name": "app0",
                              "pod_uid": "u1", "pod_name": "pod-u1", "pod_namespace": "default"}
    assert ctr_cpu.value == 0.25 and len(families["koordlet_container_psi"]) == 1  # cpu some avg10


def test_psi_is_avg10_unless_more_averages_are_asked_for():
    _, _, exporter, _ = setup_node()
    psi = scrape(exporter)["koordlet_pod_psi"]
    assert {s.labels["psi_precision"] for s in psi} == {"avg10"} and len(psi) == 3  # cpu some, mem some+full
    _, _, exporter, _ = setup_node(psi_precisions=("avg300",))
    assert [s.value for s in scrape(exporter)["koordlet_pod_psi"]] == [0.25, 1.5, 0.125]
    assert parse_args(["--metrics-psi-precisions", "avg300,avg10"])[AdvisorOptions].metrics_psi_precisions == (
        "avg10", "avg300")
    with pytest.raises(ConfigError, match="avg10,avg60,avg300"):
        parse_args(["--metrics-psi-precisions", "avg5"])


def test_psi_lines_follow_each_new_round_and_a_mutated_one():
    store = MetricStore()
    pod = make_pod("u1")
    rounds = [{("u1", ""): {"cpu": ((1.0, 0.5, 0.25), None)}}]
    exporter = AdvisorExporter(store, StaticStates(NodeInfo("node-a"), [pod]), "node-a", clock=lambda: NOW,
                               psi=lambda: rounds[-1])

    def pod_psi() -> list[float]:
        return [s.value for s in scrape(exporter)["koordlet_pod_psi"]]

    assert pod_psi() == [1.0]
    rounds.append({("u1", ""): {"cpu": ((1.0, 0.5, 0.25), None)}})  # a new round, the same averages
    assert pod_psi() == [1.0]
    rounds.append({("u1", ""): {"cpu": ((3.0, 0.5, 0.25), (0.5, 0.5, 0.5))}})
    assert pod_psi() == [3.0, 0.5]
    rounds[-1][("u1", "")]["cpu"] = ((0.0, 0.0, 0.0), None)  # even a round changed in place is seen
    assert pod_psi() == [0.0]
    rounds.append({})  # the pod's cgroup gave no PSI this round
    assert "koordlet_pod_psi" not in scrape(exporter)


def test_psi_averages_keep_their_spelling_past_the_kept_texts(monkeypatch):
    """The texts of averages are kept per value up to a bound, then forgotten at once: the
    lines say each value as before, whatever was kept."""
    from koordlet.metricsadvisor import exporter as exporter_module

    monkeypatch.setattr(exporter_module, "_AVERAGE_TEXTS_KEPT", 2)
    monkeypatch.setattr(exporter_module, "_AVERAGE_TEXTS", {})
    store = MetricStore()
    pod = make_pod("u1")
    values = [0.01, 12.34, 100.0, 0.0, 12.34, 7.5]
    rounds = [{("u1", ""): {"cpu": ((value, 0.5, 0.25), (value / 2, 0.0, 0.0))}} for value in values]
    exporter = AdvisorExporter(store, StaticStates(NodeInfo("node-a"), [pod]), "node-a", clock=lambda: NOW,
                               psi=lambda: rounds[0])
    for value in values:
        body = b"".join(exporter.render_parts(False, True, True)).decode()
        lines = [line for line in body.splitlines() if line.startswith("koordlet_pod_psi{")]
        assert [line.rsplit(" ", 1)[1] for line in lines] == [repr(value), repr(value / 2)]
        rounds.pop(0)
    assert len(exporter_module._AVERAGE_TEXTS) <= 2


def test_the_daemon_default_is_the_pod_level():
    options = parse_args([])[AdvisorOptions]
    assert not options.metrics_container_series and options.metrics_psi_precisions == ("avg10",)
    assert parse_args(["--metrics-container-series=true"])[AdvisorOptions].metrics_container_series


class CountingStates(StaticStates):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.walks = 0

    def pods(self):
        self.walks += 1
        return super().pods()


def test_metrics_walks_the_pods_once_per_scrape_and_the_split_paths_once_each():
    store, _, _, pod = setup_node(container_series=True)
    states = CountingStates(NodeInfo("node-a"), [pod])
    exporter = AdvisorExporter(store, states, "node-a", clock=lambda: NOW + 1, container_series=True)
    both = b"".join(exporter.render_parts(False, True, True))
    assert states.walks == 1
    assert both.count(b"\n") == (exporter.render() + exporter.render_external()).count(b"\n")
    assert states.walks == 3


def test_a_pods_rows_keep_the_stores_own_keys():
    store, _, exporter, _ = setup_node()
    scrape(exporter)
    written = {key: key for metric in (Metric.POD_CPU_USAGE_CORES, Metric.POD_MEMORY_USAGE_BYTES,
                                       Metric.POD_CPU_THROTTLED_RATIO) for key in store.keys(metric)}
    kept = exporter._rows["u1"].usage
    assert len(kept) == 3 and all(written[key] is key for key in kept)  # one object a series, not a copy


def test_a_changed_pod_gets_new_labels_at_the_next_scrape():
    _, states, exporter, pod = setup_node()
    assert scrape(exporter)["koordlet_pod_used_cpu_cores"][0].labels["pod_name"] == "pod-u1"
    states.put(dataclasses.replace(pod, name="renamed"))
    assert scrape(exporter)["koordlet_pod_used_cpu_cores"][0].labels["pod_name"] == "renamed"
    states.remove("u1")
    scrape(exporter)
    assert exporter._rows == {}  # nothing kept for a pod that is gone


def test_names_and_labels_follow_koordlet():
    _, _, registry, pod = setup_node(psi_precisions=("avg10", "avg60", "avg300"))
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


def test_the_pods_kept_series_follow_new_samples_and_series_made_or_dropped_after_a_scrape():
    store = MetricStore()
    pod = make_pod("u1")
    exporter = AdvisorExporter(store, StaticStates(NodeInfo("node-a"), [pod]), "node-a", clock=lambda: NOW + 1)
    store.append([Sample(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "u1"), NOW, 0.5)])
    first = scrape(exporter)
    assert [s.value for s in first["koordlet_pod_used_cpu_cores"]] == [0.5]
    assert "koordlet_pod_used_memory_bytes" not in first
    # the same pod object: the exporter reads through the keys its layout keeps
    store.append([Sample(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "u1"), NOW + 1, 0.75),
                  Sample(SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, "u1"), NOW + 1, 4096.0)])
    second = scrape(exporter)
    assert [s.value for s in second["koordlet_pod_used_cpu_cores"]] == [0.75]
    assert [s.value for s in second["koordlet_pod_used_memory_bytes"]] == [4096.0]
    store.forget_pod("u1")
    assert "koordlet_pod_used_cpu_cores" not in scrape(exporter)


def test_stale_samples_are_left_out():
    store = MetricStore()
    store.append([Sample(SeriesKey.of(Metric.NODE_CPU_USAGE_CORES), NOW - 600, 1.0)])
    assert "koordlet_node_used_cpu_cores" not in scrape(AdvisorExporter(store, None, "node-a", clock=lambda: NOW))


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian package prometheus)")
def test_promtool_finds_no_lint_problems():
    _, _, registry, _ = setup_node()
    assert promtool_problems(b"".join(registry.render_parts(False, True, True))) == []


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
    endpoint.add_metrics_parts(exporter.render_parts)
    await endpoint.start()
    try:
        bodies = {path: await get(endpoint.bound_port, path)
                  for path in ("/metrics", "/internal-metrics", "/external-metrics")}
    finally:
        await endpoint.stop()
    families = {path: {f.name for f in text_string_to_metric_families(body.decode())} for path, body in bodies.items()}
    assert {"koordlet_pod_used_cpu_cores", "koordlet_container_cpi"} <= families["/metrics"]
    assert "koordlet_pod_used_cpu_cores" in families["/internal-metrics"] - families["/external-metrics"]
    assert "koordlet_container_cpi" in families["/external-metrics"] - families["/internal-metrics"]


async def get(port: int | None, path: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET %s HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n" % path.encode())
    response = await reader.read()
    writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    return body
