"""Memory series kept in pages (pages.py) answer every read exactly as doubles do: the same
random values go to a memory series (kept in 4-byte pages until a value is not a whole
count of them) and to a series of another name kept in doubles, in the same rounds, and
every query of the store, window stat and percentile path, with the C window stats and
without, gives the same floats for both."""

from __future__ import annotations

import math
import random
from array import array
from typing import Callable

import pytest

from koordlet.metriccache import window_stats as window_stats_module
from koordlet.metriccache.aggregation import P50, P90, P95, P99
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metriccache.pages import PAGE, Figures, figures, to_pages
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore

T0 = 1.78e9
PERMILLES = (P50, P90, P95, P99, 1, 1000)
PODS = ["p%d" % i for i in range(4)]
PAGED = [SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, pod) for pod in PODS]
DOUBLES = [SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod) for pod in PODS]  # the reference: same values, doubles
NODE_PAGED, NODE_DOUBLES = SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES), SeriesKey.of(Metric.NODE_CPU_USAGE_CORES)


def page_value(rng: random.Random) -> float:
    return float(rng.choice((0, 1, rng.randrange(1 << 20), rng.randrange(1 << 32), (1 << 32) - 1)) * 4096)


def odd_value(rng: random.Random) -> float:
    return rng.choice((4096.0 * (1 << 32), 4095.0, 4096.5, rng.random() * 1e9, -4096.0, -0.0, 1e300))


def same(a: object, b: object) -> bool:
    """Equal floats (nan as nan, -0.0 told from 0.0); sequences and tuples item by item."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1.0, a) == math.copysign(1.0, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def fill(store: MetricStore, rng: random.Random, odd_from: dict[int, int]) -> None:
    """Rounds of every pod (pod i gets values that are not pages from round odd_from[i]),
    some rounds missed, some replaced, some late, as the pods' two series alike."""
    for second in range(400):
        now = T0 + second
        pairs: list[tuple[SeriesKey, float]] = []
        for i, (paged, doubles) in enumerate(zip(PAGED, DOUBLES)):
            if rng.random() < 0.03:
                continue  # a missed round: both fall out of step together
            value = odd_value(rng) if second >= odd_from.get(i, 1 << 30) and rng.random() < 0.5 else page_value(rng)
            pairs += [(paged, value), (doubles, value)]
        node = page_value(rng)
        pairs += [(NODE_PAGED, node), (NODE_DOUBLES, node)]
        store.append_columns(now, tuple(key for key, _ in pairs), [value for _, value in pairs])
        if rng.random() < 0.05:  # a second sample of the round: the newer wins
            value = page_value(rng)
            store.append_at(now, [(PAGED[1], value), (DOUBLES[1], value)])
        if second > 5 and rng.random() < 0.1:  # a late sample between two kept ones (pod 0's not pages)
            i = rng.choice((0, 2))
            value = page_value(rng) if i == 2 or rng.random() < 0.8 else odd_value(rng)
            late = now - rng.randrange(1, 5) - 0.5
            store.append_at(late, [(PAGED[i], value), (DOUBLES[i], value)])
        if second % 97 == 0:
            store.expire(now)


def answers(store: MetricStore, key: SeriesKey, start: float, end: float) -> list[object]:
    ring = store._series[key]
    out: list[object] = [store.latest_value(key), ring.window(start, end)[1].tolist()]
    for call in (lambda: store.aggregate(key, start, end, 0.0), lambda: store.mean(key, start, end, 0.0),
                 lambda: store.percentile(key, start, end, P95), lambda: store.summary(key, start, end, PERMILLES)):
        try:
            got = call()
        except Exception as error:  # the same error for both (an empty window)
            got = type(error).__name__
        out.append(tuple(got) if isinstance(got, tuple) else got)
    return out


@pytest.mark.parametrize("use_c", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_memory_series_in_pages_read_as_doubles_do(monkeypatch: pytest.MonkeyPatch, use_c: bool, seed: int) -> None:
    if not use_c:
        monkeypatch.setattr(window_stats_module, "_window_stats", None)
        monkeypatch.setattr(window_stats_module, "_page_window_stats", None)
        monkeypatch.setattr(window_stats_module, "_one", None)
    rng = random.Random(seed)
    store = MetricStore(RetentionPolicy(node_seconds=120, pod_seconds=60), clock=lambda: T0 + 400)
    fill(store, rng, {0: 200, 3: 390})
    rings = [store._series[key] for key in PAGED]
    # pods 1 and 2 (and the node) only ever got whole pages: 4 bytes a value; 0 and 3 widened
    assert [ring.values.itemsize for ring in rings] == [8, 4, 4, 8]
    assert store._series[NODE_PAGED].values.itemsize == 4
    for start, end in ((T0, T0 + 400), (T0 + 350, T0 + 380.7), (T0 + 399, T0 + 399), (T0 + 10, T0 + 20)):
        for paged, doubles in zip(PAGED + [NODE_PAGED], DOUBLES + [NODE_DOUBLES]):
            assert same(answers(store, paged, start, end), answers(store, doubles, start, end)), (paged, start, end)
        wanted = [PERMILLES, (), (P99,), PERMILLES, (P50,)]
        paged_columns = store.summary_columns(PAGED + [NODE_PAGED], start, end, wanted)
        double_columns = store.summary_columns(DOUBLES + [NODE_DOUBLES], start, end, wanted)
        assert same(list(paged_columns), list(double_columns))
        assert same(store.summaries(PAGED, start, end, wanted[:4]), store.summaries(DOUBLES, start, end, wanted[:4]))
    assert same(store.latest_values(tuple(PAGED), T0 + 390), store.latest_values(tuple(DOUBLES), T0 + 390))


def test_to_pages_takes_only_whole_counts_that_fit() -> None:
    assert [to_pages(v) for v in (0.0, 4096.0, 8192.0, PAGE * ((1 << 32) - 1))] == [0, 1, 2, (1 << 32) - 1]
    assert [to_pages(v) for v in (-0.0, -4096.0, 4095.0, 4096.5, PAGE * (1 << 32), math.nan, math.inf)] == [-1] * 7


@pytest.mark.parametrize("use_c", [True, False])
def test_windows_of_pages_figure_as_the_doubles_of_their_bytes(use_c: bool) -> None:
    """Mixed windows keep their order; a window of counts (C or Python) gives the bits of the
    same bytes as doubles, for counts up to 2**32 - 1 and windows long enough for quickselect."""
    rng = random.Random(7)
    counts = [rng.choice((rng.randrange(1 << 32), rng.randrange(1 << 12), (1 << 32) - 1, 0)) for _ in range(2000)]
    pages = array("I", counts)
    doubles = array("d", [count * PAGE for count in counts])
    spans = [(0, 2000), (5, 9), (100, 401), (1999, 2000), (0, 1800)]
    windows = [(pages if i % 2 else doubles, lo, hi) for i, (lo, hi) in enumerate(spans)]
    asked = [(P50,), (P99, P50, 1, 1000), (), PERMILLES, (P90, 500, 333)]
    expected = window_stats_module.window_stats([(doubles, lo, hi) for lo, hi in spans], asked, use_c)
    assert same(figures(windows, asked) if use_c else _without_c(lambda: figures(windows, asked)), expected)
    all_pages = [(pages, lo, hi) for lo, hi in spans]
    assert same(window_stats_module.window_stats(all_pages, asked, use_c, pages=True), expected)
    with pytest.raises(ValueError):
        figures([(pages, 0, 4)], [(0,)])


def _without_c(call: Callable[[], Figures]) -> Figures:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(window_stats_module, "_window_stats", None)
        patch.setattr(window_stats_module, "_page_window_stats", None)
        return call()
