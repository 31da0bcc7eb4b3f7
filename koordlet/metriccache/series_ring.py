"""One series in memory: its values in a float64 array used as a ring (a memory series' in
an array of 4-byte page counts while they are whole pages: pages.py), its timestamps in a
timeline that the series written in the same rounds share.

A collector writes all its series with one timestamp per round, so the timestamps are
stored once per round in a `Timeline` and each series keeps only its values (8 bytes a
sample instead of 16) and the timeline index of its oldest value: series i's k-th value
has the timestamp ``timeline.ts[first - timeline.dropped + k]``. A series stays on a shared
timeline while it gets a value every round of it; one that misses a round or gets a late
or out-of-step sample moves to a timeline of its own (a copy of its timestamps), which
behaves exactly as a series with its own timestamp array, unless a series with the very
same timestamps moved off the same timeline at this sample's round: then it joins that one
(a turn's container series, made in a round of the pods', leave the pods' timeline together).

A series holds the samples of its last ``retention`` seconds (counted from its newest)
and at most ``capacity`` of them: older ones are dropped as newer ones come (not left for
the store's periodic expiry) by moving a head index. The dead prefix is cut once it reaches
an eighth of the live values, at least 2 and at most 8 (a memmove of the live part every 8
appends at most: amortised O(1) for a few hundred values), and an array with much more
spare room than that is sized again (_cut_dead): a series written every second keeps its
300 values in ~315 slots, not the ~340 that appends and a cut at 1/8 gave, and one written
every 10 s its 12 in ~15, not 25. A timeline cuts the timestamps no series reads any
more when it has grown by an eighth; a series that has fallen more than twice its capacity
behind is moved to its own timeline then, so a stale series cannot hold a shared
timeline's memory.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from sys import getsizeof
from typing import Any

from koordlet.metriccache.pages import PAGE, PAGED, to_doubles, to_pages

_COMPACT_MIN = 16  # a timeline does not bother cutting fewer timestamps
_DEAD_MIN = 2  # nor a series fewer dead values
_SLACK = 8  # dead values always cut once this many (< 16: no reallocation, see _cut_dead)
_ZEROS = {code: [array(code, bytes(array(code).itemsize * n)) for n in range(_SLACK + 1)] for code in ("d", PAGED)}
_ARRAY_BYTES = getsizeof(array("d"))  # an empty array's object (the same for every typecode)
_NEVER = float("-inf")


class Timeline:
    """Strictly increasing round timestamps; ``dropped`` of them already cut from the front
    (so indexes kept by the series stay valid). ``users``: the series reading it: the one
    series itself while it has one (a series that fell out of step alone reads a timeline
    alone), a dict used as a set once shared (a set's table is 16 bytes a slot at most 3/5
    full: 131 KB for 2,000 series; a dict's ~37 KB of entries and indexes)."""

    __slots__ = ("ts", "dropped", "users", "limit", "moved")

    def __init__(self, ts: array | None = None) -> None:
        self.ts = array("d") if ts is None else ts
        self.dropped = 0
        self.users: SeriesRing | dict[SeriesRing, None] | None = None
        self.limit = len(self.ts) + _COMPACT_MIN  # length at which the next cut is tried
        # the timeline index of the oldest value of the last series to leave this shared
        # timeline, and the timeline it moved to: series leaving with the same timestamps follow
        self.moved: tuple[int, Timeline] | None = None

    def join(self, ring: SeriesRing) -> None:
        users = self.users
        if users is None:
            self.users = ring
        elif isinstance(users, dict):
            users[ring] = None
        elif users is not ring:
            self.users = {users: None, ring: None}

    def leave(self, ring: SeriesRing) -> None:
        users = self.users
        if users is ring:
            self.users = None
        elif isinstance(users, dict):
            users.pop(ring, None)

    def readers(self) -> list[SeriesRing]:
        users = self.users
        if users is None:
            return []
        return list(users) if isinstance(users, dict) else [users]

    def shared(self) -> bool:
        """More than one series reads it."""
        users = self.users
        return isinstance(users, dict) and len(users) > 1

    def push(self, timestamp: float) -> None:
        self.ts.append(timestamp)
        if len(self.ts) >= self.limit:
            self.trim()

    def trim(self) -> None:
        """Cut the timestamps older than every user's oldest value."""
        end = self.dropped + len(self.ts)
        needed = end
        for ring in self.readers():
            if ring.first >= needed:
                continue
            if self.shared() and end - ring.first > 2 * ring.keeping.capacity + _COMPACT_MIN:
                ring.detach()  # stale: its own copy, at most `capacity` timestamps
            else:
                needed = ring.first
        users = self.users
        if isinstance(users, dict):  # sized again for the series left: a dict never shrinks as
            self.users = dict.fromkeys(users)  # entries go (a turn's containers leave the pods' timeline)
        cut = needed - self.dropped
        if cut > 0:
            del self.ts[:cut]
            self.dropped = needed
        self.limit = len(self.ts) + max(_COMPACT_MIN, len(self.ts) // 8)


class Keeping:
    """How a series is kept, decided once by the store's policy and shared by the series
    of one kind (three slots less in every ring: 24 bytes a series)."""

    __slots__ = ("capacity", "retention", "persist", "persist_every")

    def __init__(self, capacity: int, retention: float = float("inf"), persist: bool = False,
                 persist_every: float = 0.0) -> None:
        self.capacity = max(1, capacity)
        self.retention = retention  # seconds
        self.persist = persist  # written to disk
        self.persist_every = persist_every  # seconds between two samples written (0: all)

    def as_tuple(self) -> tuple[int, float, bool, float]:
        return self.capacity, self.retention, self.persist, self.persist_every


class SeriesRing:
    __slots__ = ("timeline", "first", "values", "head", "keeping", "persisted_at")

    def __init__(self, keeping: Keeping, timeline: Timeline | None = None, in_pages: bool = False) -> None:
        self.timeline = Timeline() if timeline is None else timeline
        self.timeline.join(self)
        self.first = self.timeline.dropped + len(self.timeline.ts)  # timeline index of values[head]
        # floats; or a memory series' counts of pages while its values are whole ones (pages.py). Not
        # a part of the Keeping: the pods' cpu and memory series, alike, keep one place in append_columns
        self.values: array[Any] = array(PAGED if in_pages else "d")
        self.head = 0
        self.keeping = keeping
        self.persisted_at = _NEVER  # timestamp of the last sample written

    def due_for_disk(self, timestamp: float) -> bool:
        """Whether this sample is one to write (and remember it is)."""
        keeping = self.keeping
        if not keeping.persist or timestamp < self.persisted_at + keeping.persist_every:
            return False
        self.persisted_at = timestamp
        return True

    def __len__(self) -> int:
        return len(self.values) - self.head

    def release(self) -> None:
        """The store dropped this series: stop holding its timeline's timestamps."""
        self.timeline.leave(self)

    def append(self, timestamp: float, value: float) -> None:
        timeline = self.timeline
        ts = timeline.ts
        size = len(ts)
        count = len(self.values) - self.head
        if count == 0:  # (re)start at the timeline's newest round, or at a new one
            if size and ts[-1] == timestamp:
                self.first = timeline.dropped + size - 1
            elif size == 0 or timestamp > ts[-1]:
                self.first = timeline.dropped + size
                timeline.push(timestamp)
            else:  # older than the timeline's newest round: a timeline of our own
                self.release()
                self.timeline = Timeline()
                self.timeline.join(self)
                self.first = 0
                self.timeline.push(timestamp)
            self.push(value)
            return
        at = self.first - timeline.dropped + count  # the timeline slot after our newest value
        if at == size:
            if timestamp > ts[-1]:  # the first series of a new round
                timeline.push(timestamp)
                self.add(timestamp, value)
                return
            if timestamp == ts[-1]:  # one value per instant: the newer wins
                self.put(-1, value)
                return
        elif at == size - 1 and ts[-1] == timestamp:  # the round another series began
            self.add(timestamp, value)
            return
        elif timestamp == ts[at - 1]:
            self.put(-1, value)
            return
        if timestamp < ts[at - 1] - self.keeping.retention:
            return  # older than the retention allows: expire() would drop it
        if self._follow(timestamp, value):
            return
        self.detach()  # a missed round, or a late sample: on our own timeline from now on
        self._append_own(timestamp, value)

    def _follow(self, timestamp: float, value: float) -> bool:
        """Leave a shared timeline for the one a series with the very same timestamps left
        it for, when that one's newest round is this sample's: series written every few
        rounds of another collector's timeline (a turn's containers, made in a round of the
        pods) move off it together, onto one timeline, not one each."""
        timeline = self.timeline
        moved = timeline.moved
        if moved is None or not timeline.shared():
            return False
        first, there = moved
        count = len(self.values) - self.head
        start = first - timeline.dropped
        if first != self.first or len(there.ts) != count + 1 or there.ts[-1] != timestamp \
                or there.ts[:count] != timeline.ts[start:start + count]:
            return False
        timeline.leave(self)
        there.join(self)
        self.timeline = there
        self.first = there.dropped
        self.add(timestamp, value)
        return True

    def add(self, timestamp: float, value: float) -> None:
        """A value newer than all we hold, its timestamp already on the timeline: then drop
        the oldest past the capacity or the retention (what expire() would drop is not kept
        till then); once a series is full that is one value per append, found without a search."""
        gone = self.dropped_by_add(timestamp)
        values = self.values
        if values.typecode != PAGED:  # push's usual case inlined: every sample of append() comes here
            values.append(value)
        else:
            self.push(value)
        if gone:
            self.drop_oldest(gone)

    def dropped_by_add(self, timestamp: float) -> int:
        """How many of the oldest values `add` at `timestamp` drops. It depends only on the
        timeline, `first`, the count of values and the keeping: series written in step share
        it (the store's append_columns counts it once for them)."""
        live = len(self.values) - self.head + 1
        keeping = self.keeping
        gone = live - keeping.capacity if live > keeping.capacity else 0
        ts = self.timeline.ts
        start = self.first - self.timeline.dropped
        cutoff = timestamp - keeping.retention
        if ts[start + gone] < cutoff:
            gone += 1
            if ts[start + gone] < cutoff:
                gone = bisect_left(ts, cutoff, start + gone, start + live) - start
        return gone

    def push(self, value: float) -> None:
        """values.append(value), as a count of pages while the series keeps them."""
        values = self.values
        if values.typecode != PAGED:
            values.append(value)
            return
        pages = to_pages(value)
        if pages < 0:
            self._widen()
            self.values.append(value)
        else:
            values.append(pages)

    def put(self, index: int, value: float) -> None:
        """values[index] = value, as push keeps it."""
        values = self.values
        if values.typecode != PAGED:
            values[index] = value
            return
        pages = to_pages(value)
        if pages < 0:
            self._widen()
            self.values[index] = value
        else:
            values[index] = pages

    def _widen(self) -> None:
        """Keep doubles from now on: a value that is not a whole count of pages came."""
        self.values = to_doubles(self.values)

    def value(self, index: int) -> float:
        """values[index] as the float it was appended as."""
        value = self.values[index]
        return value * PAGE if self.values.typecode == PAGED else value

    def _append_own(self, timestamp: float, value: float) -> None:
        timeline = self.timeline
        ts = timeline.ts
        if timestamp > ts[-1]:
            timeline.push(timestamp)
            self.add(timestamp, value)
            return
        start = self.first - timeline.dropped
        at = bisect_left(ts, timestamp, start)
        if ts[at] == timestamp:
            self.put(self.head + at - start, value)
            return
        ts.insert(at, timestamp)
        self.push(value)  # kept as its neighbours are, then moved to its place
        self.values.insert(self.head + at - start, self.values.pop())
        excess = len(self.values) - self.head - self.keeping.capacity
        if excess > 0:
            self.drop_oldest(excess)
        if len(ts) >= timeline.limit:
            timeline.trim()

    def detach(self) -> None:
        """Move to a timeline of our own holding exactly our timestamps."""
        timeline = self.timeline
        start = self.first - timeline.dropped
        end = start + len(self)
        if not timeline.shared():  # ours already: keep only our own timestamps
            del timeline.ts[end:]  # rounds written after ours by series since gone
            del timeline.ts[:start]
            timeline.dropped += start
            return
        timeline.leave(self)
        own = Timeline(timeline.ts[start:end])
        own.join(self)
        timeline.moved = (self.first, own)
        self.timeline = own
        self.first = 0

    def last(self) -> tuple[float, float] | None:
        count = len(self.values) - self.head
        if count == 0:
            return None
        timeline = self.timeline
        return timeline.ts[self.first - timeline.dropped + count - 1], self.value(-1)

    def bounds(self, start: float, end: float) -> tuple[int, int]:
        """[lo, hi) indexes into ``values`` of the samples with start <= t <= end."""
        timeline = self.timeline
        first = self.first - timeline.dropped
        stop = first + len(self.values) - self.head
        lo = bisect_left(timeline.ts, start, first, stop)
        hi = bisect_right(timeline.ts, end, lo, stop)
        shift = self.head - first
        return lo + shift, hi + shift

    def timestamp(self, index: int) -> float:
        """The timestamp of ``values[index]``."""
        timeline = self.timeline
        return timeline.ts[self.first - timeline.dropped + index - self.head]

    def window(self, start: float, end: float) -> tuple[array, array]:
        """Timestamps and values with start <= t <= end (copies, oldest first)."""
        lo, hi = self.bounds(start, end)
        shift = self.first - self.timeline.dropped - self.head
        return self.timeline.ts[lo + shift:hi + shift], to_doubles(self.values[lo:hi])

    def drop_before(self, cutoff: float) -> None:
        """Forget samples older than ``cutoff``."""
        timeline = self.timeline
        first = self.first - timeline.dropped
        gone = bisect_left(timeline.ts, cutoff, first, first + len(self.values) - self.head) - first
        if gone:
            self.drop_oldest(gone)

    def drop_oldest(self, count: int) -> None:
        """Forget the `count` oldest values (their slots become the dead prefix, cut once it
        reaches its slack)."""
        self.first += count
        self.head = head = self.head + count
        if head >= _SLACK or (head >= _DEAD_MIN and head >= (len(self.values) - head) >> 3):
            self._cut_dead()

    def _cut_dead(self) -> None:
        """Drop the dead prefix, cut once it reaches its slack: an eighth of the live values,
        at least _DEAD_MIN and at most _SLACK. Fewer than 16, it is a memmove in place
        (CPython's array only reallocates a shrink of 16 or more); an array left with much
        more spare room than its slack (grown by appends: 1/16 + 7 more each time, or sized
        for a longer window) is copied once into one of exactly live + slack values, which
        the appends between two cuts then do not outgrow while the window keeps its length."""
        values = self.values
        head = self.head
        live = len(values) - head
        slack = min(_SLACK, max(_DEAD_MIN, live >> 3))
        if getsizeof(values) > _ARRAY_BYTES + values.itemsize * (live + 2 * slack + 2):
            fresh = values[head:] + _ZEROS[values.typecode][slack]  # allocated for exactly its length
            del fresh[live:]  # fewer than 16 cut: the allocation stays
            self.values = fresh
        else:
            del values[:head]
        self.head = 0
