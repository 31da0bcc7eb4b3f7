"""One series in memory: timestamps and values in two float64 arrays used as a ring.

16 bytes per sample plus ~300 bytes per series (object, two array headers, spare room).
The oldest samples are dropped by moving a head index; the dead prefix is cut once it
reaches an eighth of the capacity, so appends and trims are amortised O(1) (a memmove of
the live part every capacity/8 appends) and the arrays never hold more than 9/8 of
``capacity`` samples.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right

_COMPACT_MIN = 16  # do not bother compacting tiny dead prefixes


class SeriesRing:
    __slots__ = ("ts", "values", "head", "capacity", "retention", "persist", "persist_every", "persisted_at")

    def __init__(self, capacity: int, retention: float = float("inf"), persist: bool = False,
                 persist_every: float = 0.0) -> None:
        self.ts = array("d")
        self.values = array("d")
        self.head = 0
        self.capacity = max(1, capacity)
        self.retention = retention  # seconds, decided once by the store's policy
        self.persist = persist  # written to disk
        self.persist_every = persist_every  # seconds between two samples written (0: all)
        self.persisted_at = float("-inf")  # timestamp of the last sample written

    def due_for_disk(self, timestamp: float) -> bool:
        """Whether this sample is one to write (and remember it is)."""
        if not self.persist or timestamp < self.persisted_at + self.persist_every:
            return False
        self.persisted_at = timestamp
        return True

    def __len__(self) -> int:
        return len(self.ts) - self.head

    def append(self, timestamp: float, value: float) -> None:
        ts = self.ts
        size = len(ts)
        if size == self.head or timestamp > ts[-1]:  # the common case: a newer sample
            ts.append(timestamp)
            self.values.append(value)
            if size + 1 - self.head > self.capacity:
                self.head = size + 1 - self.capacity
                self._maybe_compact()
        elif timestamp == ts[-1]:
            self.values[-1] = value  # one value per instant: the newer wins
        else:
            self._insert_late(timestamp, value)
            if len(ts) - self.head > self.capacity:
                self.head = len(ts) - self.capacity
                self._maybe_compact()

    def _insert_late(self, timestamp: float, value: float) -> None:
        at = bisect_left(self.ts, timestamp, self.head)
        if self.ts[at] == timestamp:
            self.values[at] = value
        else:
            self.ts.insert(at, timestamp)
            self.values.insert(at, value)

    def last(self) -> tuple[float, float] | None:
        if len(self.ts) == self.head:
            return None
        return self.ts[-1], self.values[-1]

    def bounds(self, start: float, end: float) -> tuple[int, int]:
        """[lo, hi) of the samples with start <= t <= end."""
        lo = bisect_left(self.ts, start, self.head)
        return lo, bisect_right(self.ts, end, lo)

    def window(self, start: float, end: float) -> tuple[array, array]:
        """Timestamps and values with start <= t <= end (copies, oldest first)."""
        lo = bisect_left(self.ts, start, self.head)
        hi = bisect_right(self.ts, end, lo)
        return self.ts[lo:hi], self.values[lo:hi]

    def drop_before(self, cutoff: float) -> None:
        """Forget samples older than ``cutoff``."""
        self.head = bisect_left(self.ts, cutoff, self.head)
        self._maybe_compact()

    def _maybe_compact(self) -> None:
        head = self.head
        if head >= _COMPACT_MIN and (head * 8 >= self.capacity or head * 2 >= len(self.ts)):
            del self.ts[:head]
            del self.values[:head]
            self.head = 0
