"""Memory series kept in pages: 4 bytes a sample instead of 8, the same floats read back.

On a real kernel a cgroup's memory usage, working set and memory.stat sizes, and the
node's from /proc/meminfo, are whole pages, so a memory series' values are exact
multiples of 4 KiB (the smallest page size: a multiple of a larger page is one too). Such
a series keeps them as counts of 4 KiB in an ``array('I')`` (up to 16 TiB) until a value
is not an exact count that fits (fake trees, odd files): then the series turns to doubles
for good (series_ring.SeriesRing._widen), its values unchanged.

Reads give what doubles would have given, bit for bit: a count times 4096.0 is exactly its
byte value (below 2**53), and a window of counts is figured as the doubles of its bytes
(window_stats(pages=True): C turns each window into them, then sums and ranks as for any
window of doubles).
"""

from __future__ import annotations

from array import array
from itertools import compress
from math import copysign
from typing import Sequence

from koordlet.metriccache.window_stats import PAGE, Window, window_mean, window_stats

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
    return window_stats(((values, lo, hi),), ((),), pages=True)[0][0]


def figures(windows: Sequence[Window], permilles: Sequence[tuple[int, ...]]) -> Figures:
    """window_stats of windows of doubles or pages, in the same order: one C call for each kind."""
    paged = [values.typecode == PAGED for values, _, _ in windows]
    if not any(paged):
        return window_stats(windows, permilles)
    doubles = [not one for one in paged]
    return figures_apart(paged, list(compress(windows, paged)), list(compress(permilles, paged)),
                         list(compress(windows, doubles)), list(compress(permilles, doubles)))


def figures_apart(paged: Sequence[bool], paged_windows: Sequence[Window], paged_asked: Sequence[tuple[int, ...]],
                  windows: Sequence[Window], asked: Sequence[tuple[int, ...]]) -> Figures:
    """`figures` of windows already put apart by kind (paged[i]: the i-th window is the next
    of paged_windows, else of windows)."""
    if not paged_windows:
        return window_stats(windows, asked)
    if not windows:
        return window_stats(paged_windows, paged_asked, pages=True)
    return interleave(paged, window_stats(paged_windows, paged_asked, pages=True), paged_asked,
                      window_stats(windows, asked), asked)


Figures = tuple[list[float], list[float]]  # means, and the percentiles of each window one after the other


def interleave(from_first: Sequence[bool], first: Figures, first_asked: Sequence[tuple[int, ...]],
               second: Figures, second_asked: Sequence[tuple[int, ...]]) -> Figures:
    """The figures of windows in their order, window i's taken from `first` where
    from_first[i], else from `second` (each holding its windows' in their order, whose
    percentiles asked are `first_asked` and `second_asked`)."""
    firsts, seconds = iter(first[0]), iter(second[0])
    means = [next(firsts) if take_first else next(seconds) for take_first in from_first]
    if not first[1] and not second[1]:  # no percentiles asked (the overcommit round's means)
        return means, []
    pcts: list[float] = []
    asked = (iter(first_asked), iter(second_asked))
    at = [0, 0]
    for take_first in from_first:
        which = 0 if take_first else 1
        wanted = next(asked[which])
        if wanted:
            start = at[which]
            at[which] = start + len(wanted)
            pcts.extend((first if take_first else second)[1][start:start + len(wanted)])
    return means, pcts
