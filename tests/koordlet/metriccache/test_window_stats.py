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
