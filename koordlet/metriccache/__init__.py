"""The metric cache: samples from the collectors, windows and percentiles for everyone else.

`api` holds the protocol and the series names agents agree on; `store.MetricStore` is the
implementation (rings in memory, node and pod series persisted in sqlite).
"""

from koordlet.metriccache.api import (
    Aggregate,
    AggregationType,
    Metric,
    MetricCache,
    NotEnoughData,
    Sample,
    SeriesKey,
)
from koordlet.metriccache.retention import Level, RetentionPolicy
from koordlet.metriccache.store import MetricStore

__all__ = ["Aggregate", "AggregationType", "Level", "Metric", "MetricCache", "MetricStore", "NotEnoughData",
           "RetentionPolicy", "Sample", "SeriesKey"]
