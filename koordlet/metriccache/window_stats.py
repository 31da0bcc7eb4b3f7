"""Means and nearest-rank percentiles of many windows of the metric cache at once.

A window is a slice ``values[lo:hi]`` (hi > lo) of a series' ``array('d')`` ring. With the
C extension (``system._perf_ext.koord_window_stats``) one call takes the addresses of all
the windows (``array.buffer_info``, no copy) and returns every mean and percentile; without
it the same figures come from Python, bit for bit:

- the mean (aggregation.average) is the values summed one after the other from the oldest, then divided by their
  count: what koordlet does in Go (a float64 loop), and what both paths do, so they agree
  exactly. It replaces the correctly rounded ``math.fsum``: the two may differ in the last
  bits of a mean, far below what a report prints (a milli-core, a KiB).
- a percentile is koordlet's nearest rank (aggregation.nearest_rank): C selects the rank in
  a copy (quickselect) instead of sorting; equal values are interchangeable, so the value
  is the one a sort gives.
"""

from __future__ import annotations

from array import array
from itertools import accumulate, chain
from typing import Sequence

from koordlet.metriccache.aggregation import average, nearest_rank

try:  # the C statistics; without them the Python loops below give the same figures
    from system._perf_ext import ffi as _ffi
    from system._perf_ext import lib as _lib
    _window_stats = _lib.koord_window_stats
except (ImportError, AttributeError):  # pragma: no cover - extension not built
    _ffi = _window_stats = None
# windows of uint32 counts of 4 KiB pages (metriccache/pages.py); None with an extension built before it
_page_window_stats = getattr(_lib, "koord_page_window_stats", None) if _window_stats is not None else None
PAGE = 4096.0

_DOUBLE = array("d").itemsize

Window = tuple[array, int, int]  # values, lo, hi


def window_stats(windows: Sequence[Window], permilles: Sequence[tuple[int, ...]],
                 use_c: bool = True, pages: bool = False) -> tuple[list[float], list[float]]:
    """(means, percentiles): means[i] of window i; the percentiles of window i, permilles[i]
    in that order, follow each other in the second list (window 0's first). ValueError for
    a permille outside (0, 1000], on both paths. `pages`: the windows are array('I') of
    counts of 4 KiB pages, figured as the doubles of their bytes (the same bits)."""
    flat = array("i", chain.from_iterable(permilles))
    pct_at = array("i", accumulate(map(len, permilles), initial=0))
    if flat and (min(flat) <= 0 or max(flat) > 1000):
        raise ValueError("percentiles %r must be in (0, 1000] thousandths" % (sorted(set(flat)),))
    kept_as = "I" if pages else "d"  # what both paths take as doubles or pages (C would read another array past its end)
    if any(values.typecode != kept_as for values, _, _ in windows):
        raise TypeError("window_stats(pages=%r) takes windows of array(%r) only" % (pages, kept_as))
    stats = _page_window_stats if pages else _window_stats
    if stats is None or not use_c:
        return _python_stats(windows, permilles, pages)
    n = len(windows)
    addresses = array("Q", [values.buffer_info()[0] + lo * values.itemsize for values, lo, _ in windows])
    lengths = array("l", [hi - lo for _, lo, hi in windows])
    means = array("d", bytes(_DOUBLE * n))
    pcts = array("d", bytes(_DOUBLE * len(flat)))
    from_buffer = _ffi.from_buffer
    if stats(from_buffer("uint64_t[]", addresses), from_buffer("long[]", lengths), n,
                     from_buffer("int[]", pct_at), from_buffer("int[]", flat),
                     from_buffer("double[]", means, require_writable=True),
                     from_buffer("double[]", pcts, require_writable=True)):
        raise MemoryError("koord_window_stats")
    return means.tolist(), pcts.tolist()


def _python_stats(windows: Sequence[Window], permilles: Sequence[tuple[int, ...]],
                  pages: bool = False) -> tuple[list[float], list[float]]:
    means = []
    pcts: list[float] = []
    for (values, lo, hi), asked in zip(windows, permilles):
        window = array("d", [count * PAGE for count in values[lo:hi]]) if pages else values[lo:hi]
        means.append(average(window))
        if asked:
            ordered = sorted(window)
            pcts.extend(nearest_rank(ordered, permille) for permille in asked)
    return means, pcts


class _One:
    """The C call's arguments for a single window, made once: a store's `mean` of one series
    then costs a call, not seven buffers (event loop only, as every read of the store)."""

    def __init__(self) -> None:
        self.address = array("Q", [0])
        self.length = array("l", [0])
        self.mean = array("d", [0.0])
        from_buffer = _ffi.from_buffer
        self.args = (from_buffer("uint64_t[]", self.address), from_buffer("long[]", self.length), 1,
                     from_buffer("int[]", array("i", [0, 0])), _ffi.NULL,
                     from_buffer("double[]", self.mean, require_writable=True), _ffi.NULL)


_one = None if _window_stats is None else _One()


def window_mean(values: array, lo: int, hi: int) -> float:
    """average(values[lo:hi]) (hi > lo), without the copy when C does it."""
    one = _one
    if one is None:
        return average(values[lo:hi])
    one.address[0] = values.buffer_info()[0] + lo * _DOUBLE
    one.length[0] = hi - lo
    _window_stats(*one.args)
    return one.mean[0]
