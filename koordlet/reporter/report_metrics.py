"""What the reporter exports about itself on /metrics: every report attempt counted by
outcome, the batch resources and the overcommit ratios as gauges."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from koordlet.apis.keys import BATCH_CPU, BATCH_MEMORY
from koordlet.reporter.batch import BatchResources
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
        self.ratio = Gauge(
            "koordlet_realtime_overcommit_ratio", "Katalyst realtime overcommit ratio the agent reports.",
            ["node", "resource"], registry=registry)

    def count(self, report: str, sink: str, result: str) -> None:
        self.reports.labels(node=self._node, report=report, sink=sink, result=result).inc()

    def show_batch(self, batch: BatchResources) -> None:
        self.batch.labels(node=self._node, resource=BATCH_CPU, unit="core").set(batch.milli_cpu / 1000)
        self.batch.labels(node=self._node, resource=BATCH_MEMORY, unit="byte").set(batch.memory_bytes)

    def show_overcommit(self, result: OvercommitResult) -> None:
        self.ratio.labels(node=self._node, resource="cpu").set(result.cpu_ratio)
        self.ratio.labels(node=self._node, resource="memory").set(result.memory_ratio)
