"""Prometheus metrics of the executor, on a registry the daemon passes in.

Counts are added once per (resource, result) pair per batch, not once per
update, so a 6,000-update batch touches a handful of counters.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

# prometheus_client's submodules, not its package: the daemon registers the package without
# its HTTP servers before it imports this (koordlet.metrics)
from prometheus_client.metrics import Counter, Histogram
from prometheus_client.registry import CollectorRegistry

from resourceexecutor.outcome import Outcome

# 10 us .. ~2.6 s, doubling: a batch is a few ms at 6,000 updates.
BATCH_SECONDS_BUCKETS: tuple[float, ...] = tuple(10e-6 * 2 ** k for k in range(19))
# koordlet's buckets for one file write: 0.01 ms x 4^k, k < 8 (Go's ExponentialBuckets(0.01, 4, 8))
WRITE_MS_BUCKETS: tuple[float, ...] = tuple(0.01 * 4 ** k for k in range(8))


class HistogramFactory(Protocol):
    """prometheus_client's Histogram, or a class made like it (the daemon passes one whose
    lines are kept between scrapes: koordlet/metrics/histogram.py)."""

    def __call__(self, name: str, documentation: str, labelnames: Iterable[str] = (), *,
                 registry: CollectorRegistry, buckets: Sequence[float]) -> Any: ...


class ExecutorMetrics:
    """`koordlet_resource_update_total{resource,result}` and the batch duration histogram."""

    def __init__(self, registry: CollectorRegistry, histogram: HistogramFactory = Histogram) -> None:
        self.updates = Counter(
            "koordlet_resource_update_total",
            "Cgroup resource updates requested through the executor, by resource and result.",
            ("resource", "result"),
            registry=registry,
        )
        self.batch_seconds = histogram(
            "koordlet_resource_update_batch_duration_seconds",
            "Wall time of one executor batch (all passes, including rollback).",
            buckets=BATCH_SECONDS_BUCKETS,
            registry=registry,
        )
        self.write_ms = histogram(
            "koordlet_resource_update_duration_milliseconds",
            "time duration of resource update such as cgroup files",  # koordlet's series, one write each
            ("type", "status"), buckets=WRITE_MS_BUCKETS, registry=registry,
        )
        self._children: dict[tuple[str, Outcome], object] = {}

    def record_batch(self, counts: Mapping[tuple[str, Outcome], int], seconds: float) -> None:
        children = self._children
        for key, amount in counts.items():
            child = children.get(key)
            if child is None:
                child = self.updates.labels(resource=key[0], result=key[1].value)
                children[key] = child
            child.inc(amount)  # type: ignore[attr-defined]
        self.batch_seconds.observe(seconds)

    def record_writes(self, writes: Sequence[tuple[str, float, bool]]) -> None:
        """Each file write's time: koordlet_resource_update_duration_milliseconds{type,status}."""
        for resource, seconds, succeeded in writes:
            self.write_ms.labels(resource, "success" if succeeded else "failed").observe(seconds * 1000)

