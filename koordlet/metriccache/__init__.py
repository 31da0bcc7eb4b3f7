"""The metric cache: samples from the collectors, windows and percentiles for everyone else.

`api` holds the protocol and the series names agents agree on.
"""

from koordlet.metriccache.api import (
    Aggregate, AggregationType, Metric, MetricCache, NotEnoughData, Sample, SeriesKey,
)

__all__ = ["Aggregate", "AggregationType", "Metric", "MetricCache", "NotEnoughData", "Sample", "SeriesKey"]
