"""How long each series is kept, how many samples and series the cache may hold, and
which series survive a restart. Pure values; the store applies them.

Memory bound (documented in docs/ARCHITECTURE.md): every series holds at most
``retention / min_sample_interval + 2`` samples (container series: ``retention /
container_sample_interval + 2``) of 8 bytes of value, 4 for a memory series while its
values are whole pages (pages.py), (9/8 of that in its array between compactions) and 8 more bytes of timestamp only when it is not in step with
the other series of its collector (series_ring.py: one copy of the timestamps per round),
plus ~350 bytes of bookkeeping (ring, index entries; keys are the collectors'), and there
are at most ``max_series`` series (the least recently written one is dropped first). With
the defaults and 1 s samples: a node series 1,802 samples = 14 KB; a pod series 302 = 2.4
KB (its memory 1.2 KB); a container series every 10 s 14 = 112 B. bench/metric_cache_memory.py prints the bytes at 1,000
pods against 16 bytes a sample; bench/metrics_advisor.py the RSS over simulated minutes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from koordlet.metriccache.api import Metric, SeriesKey

if TYPE_CHECKING:
    from koordlet.metriccache.options import MetricCacheOptions


# memory in bytes: whole pages on a real kernel (cgroup usage and memory.stat, /proc/meminfo)
_MEMORY_METRICS = frozenset(metric.value for metric in (
    Metric.NODE_MEMORY_USAGE_BYTES, Metric.SYS_MEMORY_USAGE_BYTES, Metric.POD_MEMORY_USAGE_BYTES,
    Metric.CONTAINER_MEMORY_USAGE_BYTES, Metric.BE_MEMORY_USAGE_BYTES))


class Level(Enum):
    NODE = "node"
    POD = "pod"
    CONTAINER = "container"


def level_of(key: SeriesKey) -> Level:
    if key.container_id:
        return Level.CONTAINER
    if key.pod_uid:
        return Level.POD
    return Level.NODE


def _no_overrides() -> Mapping[str, float]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    # koordlet v1.1 keeps every series 1800 s (metric-expire-seconds). Node series need
    # the whole 30 min (NodeMetric p99 over 30 min); pod series feed podsMetric's 300 s
    # averages; container series feed the QoS loops, which look at the last minute.
    node_seconds: float = 1800.0
    pod_seconds: float = 300.0
    container_seconds: float = 120.0
    # per metric name, overriding the level's retention (e.g. PSI kept shorter)
    per_metric_seconds: Mapping[str, float] = field(default_factory=_no_overrides)
    # the fastest collector interval: sets each series' sample capacity
    min_sample_interval: float = 1.0
    # the same for container series (the usage collectors read containers less often); the
    # strategies also take it for how old a container's last sample may be
    container_sample_interval: float = 1.0
    max_series: int = 100_000
    # levels whose series are written to disk and restored after a restart
    persisted: frozenset[Level] = frozenset({Level.NODE, Level.POD})
    # pod series are written one sample per this many seconds (a restart refills their 300 s
    # averages from 30 points instead of 300; writing every second was ~1 % of a core at
    # 1,000 pods); node series, whose 30 min percentiles the NodeMetric reports, every sample
    pod_persist_every_seconds: float = 10.0

    def __post_init__(self) -> None:
        for name in ("node_seconds", "pod_seconds", "container_seconds", "min_sample_interval",
                     "container_sample_interval"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise ValueError("%s must be a positive number of seconds, got %r" % (name, value))
        if self.max_series < 1:
            raise ValueError("max_series must be at least 1")

    def seconds(self, key: SeriesKey) -> float:
        override = self.per_metric_seconds.get(key.metric)
        if override is not None:
            return override
        level = level_of(key)
        if level is Level.NODE:
            return self.node_seconds
        return self.pod_seconds if level is Level.POD else self.container_seconds

    def capacity(self, key: SeriesKey) -> int:
        interval = self.container_sample_interval if key.container_id else self.min_sample_interval
        return int(math.ceil(self.seconds(key) / interval)) + 2

    def in_pages(self, key: SeriesKey) -> bool:
        """Whether the series is memory in bytes, kept in pages while its values are whole
        ones (pages.py)."""
        return key.metric in _MEMORY_METRICS

    def persists(self, key: SeriesKey) -> bool:
        return level_of(key) in self.persisted

    def persist_every(self, key: SeriesKey) -> float:
        """Seconds between two samples of the series written to disk (0: every sample)."""
        return self.pod_persist_every_seconds if level_of(key) is Level.POD else 0.0

    @property
    def longest_seconds(self) -> float:
        return max((self.node_seconds, self.pod_seconds, self.container_seconds,
                    *self.per_metric_seconds.values()))


def retention_for(options: MetricCacheOptions, sample_interval: float,
                  container_interval: float | None = None) -> RetentionPolicy:
    """The cache's retention from its options and the collectors' sampling intervals."""
    fastest = min(sample_interval, 1.0)
    return RetentionPolicy(node_seconds=options.metric_expire_seconds,
                           pod_seconds=options.pod_metric_expire_seconds,
                           container_seconds=options.container_metric_expire_seconds,
                           min_sample_interval=fastest,
                           container_sample_interval=max(fastest, container_interval or fastest))
