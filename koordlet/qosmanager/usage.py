"""Reads of the metric cache the strategies share: a recent value or a window average.

A value older than `max_age` or a window under the cold-start rule is None (unknown),
never zero: a strategy without data does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from koordlet.metriccache.api import Metric, MetricCache, NotEnoughData, SeriesKey

# koordlet's "last" reads look back 2 collect intervals; we allow a little more
LAST_MAX_AGE = 5.0


@dataclass(frozen=True, slots=True)
class UsageView:
    cache: MetricCache
    now: float
    max_age: float = LAST_MAX_AGE
    container_max_age: float = LAST_MAX_AGE  # container series are collected less often

    # Metric is a str enum: it hashes and compares as its name, so keys are built without .value.
    def last(self, metric: Metric, pod_uid: str = "", container_id: str = "") -> float | None:
        last = self.cache.latest_value(SeriesKey(metric, pod_uid, container_id))
        if last is None or self.now - last[0] > (self.container_max_age if container_id else self.max_age):
            return None
        return last[1]

    def last_of(self, keys: Sequence[SeriesKey], max_age: float) -> list[float | None]:
        """`last` of many series at once, keys built by the caller once per pod change: a
        strategy reads a thousand pods a round, and building keys and checking ages per
        call was most of that."""
        return self.cache.latest_values(keys, self.now - max_age)

    def average(self, metric: Metric, window: float, pod_uid: str = "", container_id: str = "",
                min_coverage: float = 0.0) -> tuple[float, int] | None:
        """(avg, sample count) over [now - window, now], or None when the window is empty.
        koordlet's strategies take plain averages (no cold-start coverage rule) by default."""
        try:
            mean = self.cache.mean(SeriesKey(metric, pod_uid, container_id), self.now - window, self.now,
                                   min_coverage)
        except NotEnoughData:
            return None
        return mean.avg, mean.count
