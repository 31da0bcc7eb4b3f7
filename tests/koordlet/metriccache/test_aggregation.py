"""Percentiles and the cold-start rule against published and hand-computed values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.metriccache.aggregation import nearest_rank, summarize
from koordlet.metriccache.api import NotEnoughData


def reference_percentile(values: list[float], fraction_text: str) -> float:
    """Independent reference: the floor(n*p)-th smallest (1-based), at least the first.

    p is taken from its decimal text with integer arithmetic, so no float rounding is shared
    with the code under test."""
    whole, _, decimals = fraction_text.partition(".")
    numerator = int(whole + decimals)
    denominator = 10 ** len(decimals)
    ordered = sorted(values)
    rank = len(ordered) * numerator // denominator
    return ordered[max(rank, 1) - 1]


# koordlet pkg/koordlet/metriccache/util_test.go Test_fieldPercentileOfMetricList
def test_koordlet_published_cases():
    assert nearest_rank(sorted([800, 100, 200, 600, 700, 0, 500, 400, 300]), 900) == 700
    assert nearest_rank([1000], 500) == 1000


@pytest.mark.parametrize("n, p50, p90, p95, p99", [
    # hand-computed for the values 1..n: the floor(n*p)-th value, min 1
    (100, 50, 90, 95, 99),
    (10, 5, 9, 9, 9),
    (1, 1, 1, 1, 1),
    (1800, 900, 1620, 1710, 1782),
    (3, 1, 2, 2, 2),
])
def test_ranks_of_one_to_n(n, p50, p90, p95, p99):
    values = [float(v) for v in range(n, 0, -1)]  # reversed: the code must sort
    agg = summarize([float(t) for t in range(n)], values, 0.0, float(max(n - 1, 1)), min_coverage=0)
    assert (agg.p50, agg.p90, agg.p95, agg.p99) == (p50, p90, p95, p99)
    assert agg.count == n and agg.avg == pytest.approx((n + 1) / 2)
    assert agg.last == 1.0  # the newest sample, not the largest


def test_empty_window_is_not_enough_data():
    with pytest.raises(NotEnoughData):
        summarize([], [], 0.0, 10.0, min_coverage=0)


@pytest.mark.parametrize("first, last, ok", [
    (0.0, 149.0, False),  # 149 s of a 300 s window
    (0.0, 150.0, True),   # exactly half: koordlet's "<" fails only below half
    (100.0, 300.0, True),
    (300.0, 300.0, False),  # one sample spans nothing
])
def test_cold_start_rule_needs_half_the_window(first, last, ok):
    timestamps, values = [first, last], [1.0, 2.0]
    if ok:
        assert summarize(timestamps, values, 0.0, 300.0).count == 2
    else:
        with pytest.raises(NotEnoughData):
            summarize(timestamps, values, 0.0, 300.0)


def test_zero_coverage_answers_with_one_sample():
    agg = summarize([5.0], [3.0], 0.0, 300.0, min_coverage=0)
    assert (agg.count, agg.avg, agg.p99, agg.last) == (1, 3.0, 3.0, 3.0)


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, min_size=1, max_size=400))
def test_percentiles_match_reference_and_are_ordered(values):
    timestamps = [float(i) for i in range(len(values))]
    agg = summarize(timestamps, values, 0.0, float(len(values)), min_coverage=0)
    for name, text in (("p50", "0.50"), ("p90", "0.90"), ("p95", "0.95"), ("p99", "0.99")):
        assert getattr(agg, name) == reference_percentile(values, text)
    assert min(values) <= agg.p50 <= agg.p90 <= agg.p95 <= agg.p99 <= max(values)
    assert min(values) - 1e-3 <= agg.avg <= max(values) + 1e-3
    assert agg.avg == pytest.approx(sum(values) / len(values), rel=1e-9, abs=1e-3)
    assert agg.last == values[-1] and agg.count == len(values)
