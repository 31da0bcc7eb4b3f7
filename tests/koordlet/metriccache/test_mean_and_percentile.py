"""The cheap readers answer exactly what `aggregate` answers: the same average (the same
sequential sum over the same window) and the same nearest-rank percentile, for any window."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from koordlet.metriccache.aggregation import nearest_rank, percentile_of
from koordlet.metriccache.api import NotEnoughData, Sample, SeriesKey
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore

KEY = SeriesKey("pod_cpu_usage", "p1")
finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)


@given(st.lists(finite, min_size=1, max_size=400), st.integers(min_value=1, max_value=1000))
def test_the_percentile_of_a_window_view_is_koordlets_nearest_rank(values, permille):
    assert percentile_of(values, permille) == nearest_rank(sorted(values), permille)


@given(st.lists(finite, min_size=1, max_size=300), st.integers(0, 299), st.integers(0, 299),
       st.sampled_from([0.0, 0.5]))
def test_mean_and_percentile_equal_the_aggregates(values, a, b, coverage):
    store = MetricStore(RetentionPolicy(), clock=lambda: 1000.0)
    store.append(Sample(KEY, 100.0 + t, v) for t, v in enumerate(values))
    start, end = 100.0 + min(a, b), 100.0 + max(a, b)
    try:
        whole = store.aggregate(KEY, start, end, coverage)
    except NotEnoughData:
        with pytest.raises(NotEnoughData):
            store.mean(KEY, start, end, coverage)
        return
    mean = store.mean(KEY, start, end, coverage)
    assert (mean.count, mean.avg, mean.first_timestamp, mean.last_timestamp) == (
        whole.count, whole.avg, whole.first_timestamp, whole.last_timestamp)
    assert store.percentile(KEY, start, end, 950) == whole.p95
    assert store.percentile(KEY, start, end, 990) == whole.p99


def test_an_unknown_series_is_not_enough_data():
    store = MetricStore(RetentionPolicy())
    with pytest.raises(NotEnoughData):
        store.mean(KEY, 0, 10)
    with pytest.raises(NotEnoughData):
        store.percentile(KEY, 0, 10, 950)
