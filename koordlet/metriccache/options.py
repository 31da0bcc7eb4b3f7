"""How long the metric cache keeps each level of series, and how often it drops the expired."""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.config import defaults
from koordlet.config.option import option
from koordlet.config.parsers import parse_positive_seconds


@dataclass(frozen=True, slots=True)
class MetricCacheOptions:
    metric_expire_seconds: float = option(
        defaults.METRIC_EXPIRE_SECONDS,
        "retention of node series in the metric cache (NodeMetric p99 over 30 min)", parse_positive_seconds)
    pod_metric_expire_seconds: float = option(
        defaults.POD_METRIC_EXPIRE_SECONDS, "retention of pod series in the metric cache",
        parse_positive_seconds)
    container_metric_expire_seconds: float = option(
        defaults.CONTAINER_METRIC_EXPIRE_SECONDS, "retention of container series in the metric cache",
        parse_positive_seconds)
    metric_gc_interval_seconds: float = option(
        defaults.METRIC_GC_INTERVAL_SECONDS,
        "how often expired samples are dropped, in memory and in `<state-dir>/metric-cache.sqlite`",
        parse_positive_seconds)
