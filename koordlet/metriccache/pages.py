"""Memory series kept in pages: 4 bytes a sample instead of 8, the same floats read back.

On a real kernel a cgroup's memory usage, working set and memory.stat sizes, and the
node's from /proc/meminfo, are whole pages, so a memory series' values are exact
multiples of 4 KiB (the smallest page size: a multiple of a larger page is one too). Such
a series keeps them as counts of 4 KiB in an ``array('I')`` (up to 16 TiB) until a value
is not an exact count that fits (fake trees, odd files): then the series turns to doubles
for good (series_ring.SeriesRing._widen), its values unchanged.

Reads give what doubles would have given, bit for bit: a count times 4096.0 is exactly its
byte value, and so is every figure of a window: the mean (pages < 2**32, a window of
fewer than 2**21 of them: every partial sum is an integer below 2**53, so the sum of the
counts is exact and, times a power of two, equal to the byte values summed one after the
other as window_stats sums them; the division then rounds the same) and a nearest-rank
percentile (an element: scaling keeps the order).
"""

from __future__ import annotations

from array import array
from itertools import compress
from math import copysign
from typing import Sequence

from koordlet.metriccache.aggregation import nearest_rank
from koordlet.metriccache.window_stats import Window, window_mean, window_stats

PAGE = 4096.0
PAGED = "I"  # the typecode of a series kept in pages
PAGES_LIMIT = float(1 << 32) * PAGE  # 'I' holds counts below 2**32 (a 4-byte unsigned int)


def to_pages(value: float) -> int:
    """`value` as a count of 4 KiB pages, or -1 when it is not an exact one 'I' holds (nan,
    a negative, a fraction of a page, 16 TiB and more, -0.0)."""
    if 0.0 < value < PAGES_LIMIT or (value == 0.0 and copysign(1.0, value) > 0.0):
        if value % PAGE == 0.0:
            return int(value) >> 12
    return -1


def to_doubles(values: array) -> array:
    """A series' values as doubles (bytes), whichever way they are kept."""
    if values.typecode != PAGED:
        return values
    return array("d", [count * PAGE for count in values])


def mean_of(values: array, lo: int, hi: int) -> float:
    """window_mean of values[lo:hi] (hi > lo), pages or doubles."""
    if values.typecode != PAGED:
        return window_mean(values, lo, hi)
    return sum(values[lo:hi]) * PAGE / (hi - lo)


def figures(windows: Sequence[Window], permilles: Sequence[tuple[int, ...]]) -> tuple[list[float], list[float]]:
    """window_stats of windows of doubles or pages, in the same order: the doubles' in its
    one C call, the pages' from their counts (see the module doc for why they are equal)."""
    paged = [values.typecode == PAGED for values, _, _ in windows]
    if not any(paged):
        return window_stats(windows, permilles)
    doubles = [not one for one in paged]
    means: list[float] = []
    pcts: list[float] = []
    for (values, lo, hi), wanted in zip(compress(windows, paged), compress(permilles, paged)):
        window = values[lo:hi]
        means.append(sum(window) * PAGE / (hi - lo))
        if wanted:
            ordered = sorted(window)
            pcts.extend(nearest_rank(ordered, permille) * PAGE for permille in wanted)
    return interleave(paged, permilles, (means, pcts),
                      window_stats(list(compress(windows, doubles)), list(compress(permilles, doubles))))


Figures = tuple[list[float], list[float]]  # means, and the percentiles of each window one after the other


def interleave(from_first: Sequence[bool], permilles: Sequence[tuple[int, ...]], first: Figures,
               second: Figures) -> Figures:
    """The figures of windows in their order, window i's taken from `first` where
    from_first[i], else from `second` (each holding its windows' in their order)."""
    means: list[float] = []
    pcts: list[float] = []
    at_mean = [0, 0]
    at_pct = [0, 0]
    for take_first, wanted in zip(from_first, permilles):
        which = 0 if take_first else 1
        source_means, source_pcts = first if take_first else second
        means.append(source_means[at_mean[which]])
        at_mean[which] += 1
        at = at_pct[which]
        pcts.extend(source_pcts[at:at + len(wanted)])
        at_pct[which] = at + len(wanted)
    return means, pcts
