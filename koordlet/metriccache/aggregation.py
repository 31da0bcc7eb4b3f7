"""Pure aggregation over one window of one series: avg, percentiles, last, count.

Percentiles are koordlet v1.1's nearest-rank rule (pkg/koordlet/metriccache/util.go):
sort the values ascending and take index ``int(n * p) - 1`` clamped at 0, i.e. the
``floor(n * p)``-th smallest value (1-based), or the smallest when ``n * p < 1``. This
differs from the textbook nearest rank (``ceil(n * p)``) when ``n * p`` is not whole:
for 10 samples p95 is the 9th value here, the 10th there. koordlet multiplies in float32;
for the fixed-point percentiles it accepts (three decimals) and any realistic n the
result equals the exact ``n * permille // 1000`` used here.

Cold start (koordlet statesinformer/states_nodemetric.go, ``validateTimeRangeRatio``): a
window whose samples span less than half of it (last - first timestamp < 0.5 x window)
does not answer. koordlet applies it to the percentile reports and not to the plain
averages; callers choose through ``min_coverage``.
"""

from __future__ import annotations

from functools import reduce
from operator import add
from typing import Sequence

from koordlet.metriccache.api import Aggregate, NotEnoughData

COLD_START_RATIO = 0.5

# The percentiles an Aggregate carries, in thousandths (koordlet accepts 0.001 .. 1.000).
P50, P90, P95, P99 = 500, 900, 950, 990


def nearest_rank(sorted_values: Sequence[float], permille: int) -> float:
    """koordlet's percentile of an ascending, non-empty sequence (see module doc)."""
    if not sorted_values:
        raise NotEnoughData("no samples")
    if not 0 < permille <= 1000:
        raise ValueError("percentile %r must be in (0, 1000] thousandths" % (permille,))
    index = len(sorted_values) * permille // 1000 - 1
    return sorted_values[max(index, 0)]


def percentile_of(values: Sequence[float], permille: int) -> float:
    """nearest_rank over unsorted values, e.g. a copied window (one C sort: measured faster
    than heapq's partial selection, which is Python, even for p99 of 300 samples)."""
    return nearest_rank(sorted(values), permille)


def covers_window(first_ts: float, last_ts: float, start: float, end: float, min_coverage: float) -> bool:
    """True when samples spanning [first_ts, last_ts] may answer for the window [start, end]."""
    return (last_ts - first_ts) >= min_coverage * (end - start)


def checked_window(count: int, first_ts: float, last_ts: float, start: float, end: float,
                   min_coverage: float) -> None:
    """NotEnoughData when the window has no sample or the cold-start rule says so."""
    if count == 0:
        raise NotEnoughData("no samples in [%.3f, %.3f]" % (start, end))
    if not covers_window(first_ts, last_ts, start, end, min_coverage):
        raise NotEnoughData(
            "samples span %.1fs of a %.1fs window (need %.0f%%)"
            % (last_ts - first_ts, end - start, min_coverage * 100)
        )


def average(values: Sequence[float]) -> float:
    """The mean of non-empty values: summed one after the other in float64 from the oldest,
    as koordlet sums them in Go (not fsum, nor 3.12's compensated sum()), divided once;
    window_stats.py computes the same bits in C."""
    return reduce(add, values, 0.0) / len(values)


def summarize(
    timestamps: Sequence[float], values: Sequence[float], start: float, end: float,
    min_coverage: float = COLD_START_RATIO,
) -> Aggregate:
    """Aggregate of the samples of one window (timestamps ascending, all inside the window).

    Raises NotEnoughData when there is no sample or the cold-start rule says so.
    """
    count = len(values)
    first_ts, last_ts = (timestamps[0], timestamps[-1]) if count else (start, start)
    checked_window(count, first_ts, last_ts, start, end, min_coverage)
    ordered = sorted(values)
    return Aggregate(
        count=count,
        avg=average(values),
        p50=nearest_rank(ordered, P50),
        p90=nearest_rank(ordered, P90),
        p95=nearest_rank(ordered, P95),
        p99=nearest_rank(ordered, P99),
        last=values[-1],
        first_timestamp=first_ts,
        last_timestamp=last_ts,
    )

