"""What the reporter exports about itself on /metrics: every report attempt counted by
outcome, the batch resources and the overcommit ratios as gauges."""

from __future__ import annotations

from koordlet.apis.keys import BATCH_CPU, BATCH_MEMORY
from koordlet.metrics.client import CollectorRegistry, Counter, Gauge
from koordlet.reporter.batch import BatchResources
from koordlet.reporter.nodemetric import Percentiles, Usage
from koordlet.reporter.overcommit import OvercommitResult


class ReportMetrics:
    def __init__(self, registry: CollectorRegistry, node_name: str) -> None:
        self._node = node_name
        self.reports = Counter(
            "koordlet_reports", "Report attempts by report, sink and result "
            "(written, failed, rate_limited, not_found, not_ready).",
            ["node", "report", "sink", "result"], registry=registry)
        self.batch = Gauge(
            "koordlet_node_batch_allocatable", "Koordinator batch resources the node can give best-effort pods.",
            ["node", "resource", "unit"], registry=registry)
        # koordlet's names for the same figures
        self.koordlet_allocatable = Gauge(
            "koordlet_node_resource_allocatable", "the node allocatable of resources updated by koordlet",
            ["node", "resource", "unit"], registry=registry)
        self.node_usage = Gauge(
            "koordlet_node_metric_node_usage", "the node usage reported in the NodeMetric",
            ["node", "resource", "unit"], registry=registry)
        self.system_usage = Gauge(
            "koordlet_node_metric_system_usage", "the system usage reported in the NodeMetric",
            ["node", "resource", "unit"], registry=registry)
        # ours: the NodeMetric's aggregatedNodeUsages, which koordlet reports but does not export
        self.aggregated_usage = Gauge(
            "koordlet_node_metric_aggregated_usage",
            "the node usage percentiles over each aggregate window reported in the NodeMetric",
            ["node", "resource", "unit", "percentile", "window_seconds"], registry=registry)
        self.ratio = Gauge(
            "koordlet_realtime_overcommit_ratio", "Katalyst realtime overcommit ratio the agent reports.",
            ["node", "resource"], registry=registry)

    def count(self, report: str, sink: str, result: str) -> None:
        self.reports.labels(node=self._node, report=report, sink=sink, result=result).inc()

    def show_batch(self, batch: BatchResources) -> None:
        for gauge in (self.batch, self.koordlet_allocatable):
            gauge.labels(node=self._node, resource=BATCH_CPU, unit="core").set(batch.milli_cpu / 1000)
            gauge.labels(node=self._node, resource=BATCH_MEMORY, unit="byte").set(batch.memory_bytes)

    def show_usage(self, node: Usage, system: Usage) -> None:
        """What the NodeMetric just reported (koordlet's node_metric_* series)."""
        for gauge, usage in ((self.node_usage, node), (self.system_usage, system)):
            gauge.labels(node=self._node, resource="cpu", unit="core").set(usage.cpu_cores)
            gauge.labels(node=self._node, resource="memory", unit="byte").set(usage.memory_bytes)

    def show_aggregated(self, windows: tuple[Percentiles, ...]) -> None:
        for window in windows:
            seconds = "%g" % window.duration_seconds
            for percentile, usage in window.by_kind:
                labels = dict(node=self._node, percentile=percentile, window_seconds=seconds)
                self.aggregated_usage.labels(resource="cpu", unit="core", **labels).set(usage.cpu_cores)
                self.aggregated_usage.labels(resource="memory", unit="byte", **labels).set(usage.memory_bytes)

    def show_overcommit(self, result: OvercommitResult) -> None:
        self.ratio.labels(node=self._node, resource="cpu").set(result.cpu_ratio)
        self.ratio.labels(node=self._node, resource="memory").set(result.memory_ratio)
