"""`summary` (one search, one copy, one sort: the NodeMetric's reader) answers bit for bit
what a sort and a sequential float64 sum of the same window answer, and what `aggregate` and `mean` answer:
random appends, expiries by capacity and retention, late samples, replaced samples, missed
rounds, values of any magnitude, and windows that leave out a few or many of the values."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.metriccache.aggregation import P50, P90, P95, P99, nearest_rank
from koordlet.metriccache.api import NotEnoughData, Sample, SeriesKey
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore
from tests.koordlet.metriccache.reference import sequential_mean

KEY = SeriesKey("pod_cpu_usage_cores", "p1")
OTHER = SeriesKey("pod_memory_usage_bytes", "p1")  # shares the timeline, so KEY can fall out of step
MISSING = SeriesKey("pod_cpu_usage_cores", "gone")
PERMILLES = (P50, P90, P95, P99, 1, 1000)


def brute_force(store: MetricStore, key: SeriesKey, start: float, end: float) -> tuple[int, float, list[float]]:
    whole = store.aggregate(key, start, end, min_coverage=0.0)
    ring = store._series[key]
    _, values = ring.window(start, end)  # the reference: window copy, sequential sum, sort
    ordered = sorted(values)
    assert same(whole.avg, sequential_mean(values))
    return whole.count, whole.avg, [nearest_rank(ordered, p) for p in PERMILLES]


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def check(store: MetricStore, key: SeriesKey, start: float, end: float) -> None:
    try:
        count, avg, picked = brute_force(store, key, start, end)
    except NotEnoughData:
        with pytest.raises(NotEnoughData):
            store.summary(key, start, end, PERMILLES)
        return
    mean, percentiles = store.summary(key, start, end, PERMILLES)
    assert mean.count == count and same(mean.avg, avg), (mean, avg)
    assert all(same(a, b) for a, b in zip(percentiles, picked)), (percentiles, picked)
    assert same(store.mean(key, start, end, 0.0).avg, avg)
    (batched, batched_percentiles), missing = store.summaries([key, MISSING], start, end, [PERMILLES, (P99,)])
    assert missing is None and batched == mean and batched_percentiles == percentiles
    # as columns, a key with no sample between two that have some: nan at its place, the
    # percentiles of the others where they were asked
    spans, means, flat = store.summary_columns([key, MISSING, key], start, end, [(P99,), (P50, P90), PERMILLES])
    assert spans[1] is None and spans[0] is spans[2] and spans[0].count == count
    assert math.isnan(means[1]) and all(math.isnan(v) for v in flat[1:3])
    assert same(means[0], avg) and same(means[2], avg)
    assert same(flat[0], percentiles[3]) and all(same(a, b) for a, b in zip(flat[3:], percentiles))


values_of = st.sampled_from(["cores", "bytes", "wide", "trend_down", "trend_up", "ties"])


def draw_value(rng: random.Random, kind: str, step: int) -> float:
    if kind == "cores":
        return rng.random() * 8
    if kind == "bytes":
        return float(rng.randrange(1 << 34))
    if kind == "wide":  # magnitudes far apart: only an exact sum rounds once
        return rng.choice((1e-9, 3.5, 1e12, 2.0 ** -60, 0.1)) * rng.random()
    if kind == "trend_down":  # every expiry takes the largest
        return 1e6 - step + rng.random()
    if kind == "trend_up":
        return step + rng.random()
    return float(rng.randrange(4))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32), values_of, st.integers(30, 700))
def test_summary_equals_sort_and_sequential_sum(seed, kind, steps):
    rng = random.Random(seed)
    store = MetricStore(RetentionPolicy(pod_seconds=120.0), clock=lambda: 0.0)
    t = 1000.0
    for step in range(steps):
        t += 1.0
        event = rng.random()
        if event < 0.03:  # a missed round for KEY: it moves to its own timeline
            store.append([Sample(OTHER, t, 1.0)])
            continue
        if event < 0.05:  # a late sample inside the retention
            store.append([Sample(KEY, t - rng.randrange(1, 50) - 0.5, draw_value(rng, kind, step))])
        elif event < 0.07:  # the same instant again: the newer value wins
            store.append([Sample(KEY, t - 1.0, draw_value(rng, kind, step))])
        elif event < 0.08:
            store.expire(t - rng.randrange(0, 40))
        store.append([Sample(KEY, t, draw_value(rng, kind, step)), Sample(OTHER, t, 2.0)])
        if rng.random() < 0.2:
            end = t - rng.choice((0.0, 0.0, 0.5, 3.0))
            start = end - rng.choice((120.0, 119.5, 60.0, 200.0, 5.0))
            check(store, KEY, start, end)
    check(store, KEY, t - 120.0, t)


def test_a_value_that_is_not_finite_makes_the_mean_not_finite_until_it_expires():
    store = MetricStore(RetentionPolicy(pod_seconds=10.0), clock=lambda: 0.0)
    store.append(Sample(KEY, 100.0 + t, 1.5) for t in range(5))
    assert store.summary(KEY, 90.0, 104.0, (P99,))[0].avg == 1.5
    store.append([Sample(KEY, 105.0, float("nan"))])
    assert math.isnan(store.summary(KEY, 90.0, 105.0, (P99,))[0].avg)
    store.append(Sample(KEY, 106.0 + t, 2.5) for t in range(11))
    mean, (p99,) = store.summary(KEY, 106.0, 116.0, (P99,))
    assert (mean.avg, p99) == (2.5, 2.5)
