"""Prometheus metrics of the ORM, on the daemon's registry.

koordlet_orm_admissions_total{result}: admitted / rejected pods (per admit call);
koordlet_orm_admission_duration_seconds: admit + allocate + checkpoint, as the caller waits;
koordlet_orm_exclusive_cpus, koordlet_orm_registered_plugins: gauges read at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable

from koordlet.metrics.client import CollectorRegistry, Counter, Gauge, Histogram

# 50 us .. ~1.6 s, doubling: a decision is well under a millisecond, a checkpoint fsync a few.
ADMISSION_SECONDS_BUCKETS: tuple[float, ...] = tuple(50e-6 * 2 ** k for k in range(16))


class OrmMetrics:
    def __init__(self, registry: CollectorRegistry, exclusive_cpus: Callable[[], int],
                 plugins: Callable[[], int]) -> None:
        admissions = Counter("koordlet_orm_admissions_total", "Pod admissions by the ORM, by result.",
                             ("result",), registry=registry)
        self.admitted = admissions.labels(result="admitted")
        self.rejected = admissions.labels(result="rejected")
        self.seconds = Histogram("koordlet_orm_admission_duration_seconds",
                                 "Admit, allocate and checkpoint one pod, as its caller waits.",
                                 buckets=ADMISSION_SECONDS_BUCKETS, registry=registry)
        Gauge("koordlet_orm_exclusive_cpus", "CPUs held exclusively by containers.",
              registry=registry).set_function(exclusive_cpus)
        Gauge("koordlet_orm_registered_plugins", "QRM resource plugins registered and reachable.",
              registry=registry).set_function(plugins)
