"""window_stats: the C path and the Python path give the same bits, and those are what a
left-to-right float64 sum and a sort with koordlet's nearest rank give, over random, tied
and wide-ranging windows (NaN-free), windows cut anywhere in a ring, and batches mixing
windows with and without percentiles."""

from __future__ import annotations

import random
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.metriccache import window_stats as module
from koordlet.metriccache.aggregation import nearest_rank
from koordlet.metriccache.window_stats import window_mean, window_stats
from tests.koordlet.metriccache.reference import sequential_mean

PERMILLES = (1, 10, 500, 900, 950, 990, 999, 1000)
needs_c = pytest.mark.skipif(module._window_stats is None, reason="system._perf_ext not built")


def draw(rng: random.Random, kind: str, n: int) -> list[float]:
    if kind == "ties":
        return [float(rng.randrange(3)) for _ in range(n)]
    if kind == "all_equal":
        return [2.5] * n
    if kind == "wide":  # an fsum would round these differently
        return [rng.choice((1e-9, 3.5, 1e12, 2.0 ** -60, 0.1, -7e11)) * rng.random() for _ in range(n)]
    if kind == "sorted":
        return sorted(rng.random() for _ in range(n))
    if kind == "reversed":
        return sorted((rng.random() for _ in range(n)), reverse=True)
    return [rng.random() * 8 for _ in range(n)]


kinds = st.sampled_from(["random", "ties", "all_equal", "wide", "sorted", "reversed"])


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2 ** 32), st.lists(st.tuples(kinds, st.integers(1, 400), st.booleans()), min_size=1, max_size=8))
def test_both_paths_equal_a_sequential_sum_and_a_sort(seed, shapes):
    rng = random.Random(seed)
    windows, asked, means, picked = [], [], [], []
    for kind, n, with_percentiles in shapes:
        values = draw(rng, kind, n)
        pad_front, pad_back = rng.randrange(5), rng.randrange(5)  # a window inside a longer ring
        ring = array("d", [rng.random() for _ in range(pad_front)] + values + [9e9] * pad_back)
        windows.append((ring, pad_front, pad_front + n))
        wanted = tuple(rng.sample(PERMILLES, rng.randrange(1, 5))) if with_percentiles else ()
        asked.append(wanted)
        means.append(sequential_mean(values))
        picked.extend(nearest_rank(sorted(values), permille) for permille in wanted)
    python = window_stats(windows, asked, use_c=False)
    assert python == (means, picked)
    if module._window_stats is not None:
        assert window_stats(windows, asked) == python
        assert [window_mean(*window) for window in windows] == means


@needs_c
def test_the_c_path_leaves_the_rings_as_they_were():
    ring = array("d", [5.0, 1.0, 4.0, 2.0, 3.0])
    assert window_stats([(ring, 0, 5)], [(500, 990)]) == ([3.0], [2.0, 4.0])
    assert ring.tolist() == [5.0, 1.0, 4.0, 2.0, 3.0]


@needs_c
def test_a_long_window_and_many_windows_in_one_call():
    rng = random.Random(7)
    windows = [(array("d", draw(rng, "random", n)), 0, n) for n in (1, 2, 3, 1800, 20_000)] * 40
    asked = [(500, 900, 950, 990)] * len(windows)
    means, pcts = window_stats(windows, asked)
    assert means == [sequential_mean(values.tolist()) for values, _, _ in windows]
    assert pcts == [nearest_rank(sorted(values), p) for values, _, _ in windows for p in asked[0]]


def test_the_mean_is_not_fsum_but_the_sequential_sum():
    values = [1e16, 1.0, -1e16, 1.0]
    ring = array("d", values)
    assert window_stats([(ring, 0, 4)], [()])[0] == [sequential_mean(values)] == [0.25]  # fsum: 0.5


@pytest.mark.parametrize("use_c", [True, False])
@pytest.mark.parametrize("permille", [0, -5, 1001])
def test_a_percentile_outside_the_range_is_refused_on_both_paths(use_c, permille):
    with pytest.raises(ValueError):
        window_stats([(array("d", [1.0, 2.0]), 0, 2)], [(500, permille)], use_c=use_c)


@needs_c
def test_the_store_reads_the_same_figures_without_the_extension(monkeypatch):
    from koordlet.metriccache.api import Sample, SeriesKey
    from koordlet.metriccache.store import MetricStore

    rng = random.Random(3)
    store = MetricStore(clock=lambda: 0.0)
    keys = [SeriesKey("pod_cpu_usage_cores", "p%d" % i) for i in range(5)]
    for t in range(200):
        store.append(Sample(key, 1000.0 + t, rng.choice((rng.random() * 8, 1e12 * rng.random(), 1.0)))
                     for key in keys)

    def figures() -> list:
        return [store.summaries(keys, 1050.0, 1199.0, [(950,), (), (500, 990), (1,), (1000,)]),
                [store.aggregate(key, 1050.0, 1199.0) for key in keys],
                [store.mean(key, 1100.0, 1199.0) for key in keys],
                [store.summary(key, 1000.0, 1199.0, (900, 990)) for key in keys]]

    with_c = figures()
    monkeypatch.setattr(module, "_window_stats", None)
    monkeypatch.setattr(module, "_one", None)
    assert figures() == with_c


@pytest.mark.parametrize("use_c", [True, False])
def test_windows_of_another_array_type_than_asked_are_refused_on_both_paths(use_c):
    pages = array("I", [1, 2, 3])
    doubles = array("d", [4096.0, 8192.0, 12288.0])
    with pytest.raises(TypeError):
        window_stats([(pages, 0, 3)], [(500,)], use_c=use_c)
    with pytest.raises(TypeError):
        window_stats([(doubles, 0, 3), (pages, 0, 3)], [(), ()], use_c=use_c, pages=True)
    assert window_stats([(pages, 0, 3)], [(500,)], use_c=use_c, pages=True) == window_stats(
        [(doubles, 0, 3)], [(500,)], use_c=use_c)
