"""The reporter's gauges carry what the NodeMetric reported, percentile by window."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from koordlet.reporter.nodemetric import Percentiles, Usage
from koordlet.reporter.report_metrics import ReportMetrics


def test_each_windows_percentiles_become_one_gauge_per_resource():
    registry = CollectorRegistry()
    metrics = ReportMetrics(registry, "n1")
    metrics.show_aggregated((Percentiles(300.0, (("p50", Usage(1.5, 2.0e9)), ("p99", Usage(3.25, 4.0e9)))),
                             Percentiles(1800.0, (("p50", Usage(0.5, 1.0e9)),))))

    def value(resource: str, percentile: str, window: str) -> float | None:
        return registry.get_sample_value("koordlet_node_metric_aggregated_usage", {
            "node": "n1", "resource": resource, "unit": "core" if resource == "cpu" else "byte",
            "percentile": percentile, "window_seconds": window})

    assert value("cpu", "p99", "300") == 3.25
    assert value("memory", "p50", "300") == 2.0e9
    assert value("cpu", "p50", "1800") == 0.5
    assert value("cpu", "p99", "1800") is None
