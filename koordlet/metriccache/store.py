"""The metric cache: a ring per series in memory, and the series that must outlive a
restart (node and pod level by default) written to sqlite in the state dir.

Threading: every method except ``flush`` and ``expire_on_disk`` runs on the event loop.
Those two do disk IO and are meant for a worker thread (``MetricCacheModule`` calls them
through ``asyncio.to_thread``); they only touch the pending-rows list (swapped under a
lock) and the sqlite connection (serialised by another lock).

Bounds: see retention.py for per-series capacity and ``max_series``; rows waiting for a
flush are capped at ``max_pending`` (the oldest are dropped and counted if the disk falls
behind), so a stuck disk cannot grow memory.
"""

from __future__ import annotations

import threading
import time
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict, defaultdict
from functools import partial
from itertools import compress
from pathlib import Path
from typing import Callable, Iterable, Sequence

import structlog

from koordlet.metriccache.aggregation import (
    COLD_START_RATIO,
    P50,
    P90,
    P95,
    P99,
    checked_window,
    percentile_of,
)
from koordlet.metriccache.api import (
    Aggregate,
    Mean,
    Metric,
    NotEnoughData,
    Sample,
    SeriesKey,
    WindowColumns,
    WindowSpan,
)
from koordlet.metriccache.pages import PAGED, figures, figures_apart, interleave, mean_of, to_doubles, to_pages
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.series_ring import Keeping, SeriesRing, Timeline
from koordlet.metriccache.sqlite_persistence import SqlitePersistence

log = structlog.get_logger(__name__)

DB_FILE_NAME = "metric-cache.sqlite"
DEFAULT_MAX_PENDING = 1_000_000
# A collector's round reads off the loop and appends after: a pod (or container) deleted
# meanwhile would get its series back and keep them until retention (bench.pod_churn). New
# series of a pod or container are refused this long after it was forgotten; pod uids and
# container ids are never reused (and never alike: a uid has dashes, an id is 64 hex digits).
GONE_SECONDS = 60.0
GONE_CAPACITY = 4096
_AGGREGATE_PERCENTILES = (P50, P90, P95, P99)
# Mean(count, avg, first, last) without the NamedTuple's Python-level __new__: summaries
# makes one a series
_mean = partial(tuple.__new__, Mean)
_UNSEEN = WindowSpan(0, 0, 0, 0.0, 0.0)  # a span not looked up yet (None: a window with no sample)
_NAN = float("nan")
_NO_PLACE: tuple[Timeline | None, int, int, Keeping | None] = (None, 0, 0, None)


def _span(timeline: Timeline, first: int, count: int, start: float, end: float) -> WindowSpan | None:
    """The window [start, end] of a series whose `count` values start at timeline index
    `first`, or None when no value is in it (SeriesRing.bounds, by the series' place on
    the timeline)."""
    ts = timeline.ts
    at = first - timeline.dropped
    lo = bisect_left(ts, start, at, at + count)
    hi = bisect_right(ts, end, lo, at + count)
    return None if lo == hi else WindowSpan(lo - at, hi - at, hi - lo, ts[lo], ts[hi - 1])


def _spread(spans: Sequence[WindowSpan | None], permilles: Sequence[tuple[int, ...]], means: list[float],
            pcts: list[float]) -> tuple[list[float], list[float]]:
    """The figures of the keys that have a span, put at every key's place (nan for the others)."""
    missing = [span is None for span in spans]
    not_found = list(compress(permilles, missing))
    found = [wanted for wanted, gone in zip(permilles, missing) if not gone]
    return interleave(missing, ([_NAN] * len(not_found), [_NAN] * sum(map(len, not_found))), not_found,
                      (means, pcts), found)


_RING_LISTS_KEPT = 32  # key tuples whose rings are kept looked up (the strategies use a handful, the
# usage round one per container turn: ten)


class MetricStore:
    """Implements the MetricCache protocol (koordlet/metriccache/api.py)."""

    def __init__(
        self,
        policy: RetentionPolicy | None = None,
        persistence: SqlitePersistence | None = None,
        clock: Callable[[], float] = time.time,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> None:
        self.policy = policy or RetentionPolicy()
        self._clock = clock
        self._series: dict[SeriesKey, SeriesRing] = {}
        self._generation = 0  # counts series made and dropped: a looked-up ring list holds while it stands
        self._ring_lists: dict[int, tuple[tuple[SeriesKey, ...], int, list[SeriesRing | None]]] = {}
        self._ring_lists_generation = 0  # the generation of every lookup in _ring_lists
        self._keepings: dict[tuple[int, float, bool, float], Keeping] = {}
        # indexes: a dict used as an ordered set (smaller than a set) whose values are its keys
        # (what shared_key hands out; a value slot is there anyway), and a short list per pod
        self._by_metric: dict[str, dict[SeriesKey, SeriesKey]] = defaultdict(dict)
        self._by_pod: dict[str, list[SeriesKey]] = defaultdict(list)
        self._persistence = persistence
        self._disk_lock = threading.Lock()
        self._pending_lock = threading.Lock()
        self._pending: list[tuple[SeriesKey, float, float, float]] = []
        self._forgotten: list[SeriesKey] = []
        self._gone: OrderedDict[str, float] = OrderedDict()  # pod uid or container id -> when forgotten
        self.refused_gone = 0  # samples of pods or containers forgotten less than GONE_SECONDS ago
        self._max_pending = max_pending
        self.dropped_pending = 0  # rows never written because the disk fell behind
        self.evicted_series = 0  # series dropped to stay under max_series
        if persistence is not None:
            self._restore(persistence)

    @classmethod
    def open(cls, state_dir: Path, policy: RetentionPolicy | None = None,
             clock: Callable[[], float] = time.time) -> "MetricStore":
        return cls(policy, SqlitePersistence(state_dir / DB_FILE_NAME), clock)

    @property
    def persistent(self) -> bool:
        return self._persistence is not None

    def attach(self, persistence: SqlitePersistence) -> None:
        """Start persisting (daemon start): restore what the file holds, then write to it.
        Samples appended before stay in memory only."""
        if self._persistence is not None:
            raise RuntimeError("the metric store already has a file")
        self._restore(persistence)
        self._persistence = persistence

    # ------------------------------------------------------------------ protocol
    def append(self, samples: Iterable[Sample]) -> None:
        self._queue(self._put((sample.key, sample.timestamp, sample.value) for sample in samples))

    def append_at(self, timestamp: float, values: Iterable[tuple[SeriesKey, float]]) -> None:
        """Samples that share one timestamp, without a Sample object each (collectors' path)."""
        self._queue(self._put((key, timestamp, value) for key, value in values))

    def append_columns(self, timestamp: float, keys: tuple[SeriesKey, ...], values: Sequence[float | None],
                       start: int = 0, stop: int | None = None) -> None:
        """append_at of the pairs (keys[i], values[i]) for i in [start, stop), None where a
        series has no sample (the collectors' rounds: a keys tuple kept per listing, a values
        list filled each round). The series of a tuple are looked up once while no series is
        made or dropped (_rings_of) and no tuple is made per sample: at 1,000 pods the
        2,400 appends a second were ~7 % of the daemon's CPU."""
        kept = self._kept_rings(keys)
        rings = kept[start:stop] if kept is not None else self._rings_in_slices(keys, start, stop)
        if start or stop is not None:
            keys, values = keys[start:stop], values[start:stop]
        persist_rows: list[tuple[SeriesKey, float, float, float]] = []
        new: list[tuple[SeriesKey, float, float]] = []
        timeline = None
        # the place (timeline, first, count, keeping) of the last series added in step, and
        # how many values its add dropped: the next series in the same place drops as many
        # (the pods' series of a round are all in one place)
        place = _NO_PLACE
        gone = 0
        for key, ring, value in zip(keys, rings, values):
            if value is None:
                continue
            if ring is None:
                new.append((key, timestamp, value))
                continue
            ring_values = ring.values
            count = len(ring_values) - ring.head
            timeline, first, keeping = ring.timeline, ring.first, ring.keeping
            in_step = place[0] is timeline and place[1] == first and place[2] == count and place[3] is keeping
            if not in_step:
                ts = timeline.ts
                # the round another series of the timeline began (ring.append's usual case): straight in
                in_step = count > 0 and ts[-1] == timestamp and first - timeline.dropped + count == len(ts) - 1
                if in_step:
                    place, gone = (timeline, first, count, keeping), ring.dropped_by_add(timestamp)
                else:
                    place = _NO_PLACE  # append may put a round on the timeline: no place holds
                    ring.append(timestamp, value)
                    timeline = ring.timeline
            if in_step:  # ring.add inlined, its drop counted once for the place
                if ring_values.typecode != PAGED:
                    ring_values.append(value)
                elif (pages := to_pages(value)) >= 0:
                    ring_values.append(pages)
                else:
                    ring.push(value)  # turns the series to doubles
                if gone:
                    ring.drop_oldest(gone)
            if keeping.persist and timestamp >= ring.persisted_at + keeping.persist_every:  # ring.due_for_disk inlined
                ring.persisted_at = timestamp
                persist_rows.append((key, keeping.retention, timestamp, value))
        self._queue(self._put_new(new, timeline, persist_rows))

    def _put(self, items: Iterable[tuple[SeriesKey, float, float]]) -> list[tuple[SeriesKey, float, float, float]]:
        """Append the samples; the rows now due for the disk."""
        persist_rows: list[tuple[SeriesKey, float, float, float]] = []
        series = self._series
        new: list[tuple[SeriesKey, float, float]] = []
        timeline = None  # the timeline of the batch's known series: new series of the round join it
        for key, timestamp, value in items:
            ring = series.get(key)
            if ring is None:
                new.append((key, timestamp, value))
                continue
            ring.append(timestamp, value)
            timeline = ring.timeline
            if ring.due_for_disk(timestamp):
                persist_rows.append((key, ring.keeping.retention, timestamp, value))
        return self._put_new(new, timeline, persist_rows)

    def _put_new(self, new: list[tuple[SeriesKey, float, float]], timeline: Timeline | None,
                 persist_rows: list[tuple[SeriesKey, float, float, float]]) -> list[tuple[SeriesKey, float, float, float]]:
        """The samples of a batch whose series were not there when it came (made now: on
        the timeline of the batch's known series when it holds this round); the batch's rows
        for the disk (`persist_rows` and theirs)."""
        series = self._series
        gone = self._gone
        for key, timestamp, value in new:
            ring = series.get(key)
            if ring is None:
                if gone and self._still_gone(key):
                    self.refused_gone += 1
                    continue
                ring = self._new_series(key, timeline if timeline is not None and len(timeline.ts)
                                        and timeline.ts[-1] == timestamp else None)
            ring.append(timestamp, value)
            timeline = ring.timeline
            if ring.due_for_disk(timestamp):
                persist_rows.append((key, ring.keeping.retention, timestamp, value))
        return persist_rows

    def aggregate(self, key: SeriesKey, start: float, end: float,
                  min_coverage: float = COLD_START_RATIO) -> Aggregate:
        """Samples with start <= timestamp <= end. NotEnoughData when the window is empty
        or its samples span less than ``min_coverage`` of it (koordlet's cold-start rule;
        pass 0 for koordlet's plain averages, which skip the rule). The figures are
        aggregation.summarize's, computed in one window_stats call."""
        ring = self._series.get(key)
        if ring is None:
            raise NotEnoughData("no series %s" % (key,))
        lo, hi = ring.bounds(start, end)
        first_ts, last_ts = (ring.timestamp(lo), ring.timestamp(hi - 1)) if hi > lo else (start, start)
        checked_window(hi - lo, first_ts, last_ts, start, end, min_coverage)
        means, (p50, p90, p95, p99) = figures(((ring.values, lo, hi),), (_AGGREGATE_PERCENTILES,))
        return Aggregate(hi - lo, means[0], p50, p90, p95, p99, ring.value(hi - 1), first_ts, last_ts)

    def mean(self, key: SeriesKey, start: float, end: float, min_coverage: float = COLD_START_RATIO) -> Mean:
        """`aggregate`'s avg, without the percentiles."""
        ring, lo, hi = self._samples_between(key, start, end)
        first_ts, last_ts = ring.timestamp(lo), ring.timestamp(hi - 1)
        checked_window(hi - lo, first_ts, last_ts, start, end, min_coverage)
        return Mean(hi - lo, mean_of(ring.values, lo, hi), first_ts, last_ts)

    def percentile(self, key: SeriesKey, start: float, end: float, permille: int) -> float:
        """One high percentile of the window (koordlet's nearest rank, as `aggregate` gives
        it), with no coverage rule: callers check coverage on the `mean` they already have."""
        ring = self._series.get(key)
        if ring is None:
            raise NotEnoughData("no series %s" % (key,))
        lo, hi = ring.bounds(start, end)
        return percentile_of(to_doubles(ring.values[lo:hi]), permille)

    def summary(self, key: SeriesKey, start: float, end: float,
                permilles: tuple[int, ...] = ()) -> tuple[Mean, tuple[float, ...]]:
        """`mean` with no coverage rule and the asked percentiles (the values `aggregate` gives)."""
        ring, lo, hi = self._samples_between(key, start, end)
        means, pcts = figures(((ring.values, lo, hi),), (permilles,))
        return Mean(hi - lo, means[0], ring.timestamp(lo), ring.timestamp(hi - 1)), tuple(pcts)

    def summaries(self, keys: Sequence[SeriesKey], start: float, end: float,
                  permilles: Sequence[tuple[int, ...]]) -> list[tuple[Mean, tuple[float, ...]] | None]:
        """`summary` of many series in one window_stats call (summary_columns as tuples)."""
        spans, means, pcts = self.summary_columns(keys, start, end, permilles)
        out: list[tuple[Mean, tuple[float, ...]] | None] = []
        at = 0
        for span, mean, wanted in zip(spans, means, permilles):
            taken = at + len(wanted)
            out.append(None if span is None else
                       (_mean((span[2], mean, span[3], span[4])), tuple(pcts[at:taken]) if wanted else ()))
            at = taken
        return out

    def summary_columns(self, keys: Sequence[SeriesKey], start: float, end: float,
                        permilles: Sequence[tuple[int, ...]]) -> WindowColumns:
        """Every key's span, mean and asked percentiles in one window_stats call. Series
        written in the same rounds share a timeline and so, mostly, their window's span:
        it is searched once per (timeline, first sample, count)."""
        get = self._series.get
        by_place: dict[tuple[Timeline, int, int], WindowSpan | None] = {}
        spans: list[WindowSpan | None] = []
        windows: list[tuple[array, int, int]] = []
        asked: list[tuple[int, ...]] = []
        paged: list[bool] = []  # whether each window (with a span) is of pages (then in paged_windows)
        paged_windows: list[tuple[array, int, int]] = []
        paged_asked: list[tuple[int, ...]] = []
        last_timeline, last_first, last_count, span = None, 0, 0, None  # the previous series' place
        for key, wanted in zip(keys, permilles):
            ring = get(key)
            if ring is None:
                spans.append(None)
                continue
            values = ring.values
            head = ring.head
            count = len(values) - head
            if ring.timeline is not last_timeline or ring.first != last_first or count != last_count:
                last_timeline, last_first, last_count = place = ring.timeline, ring.first, count
                span = by_place.get(place, _UNSEEN)
                if span is _UNSEEN:
                    span = by_place[place] = _span(*place, start, end)
            spans.append(span)
            if span is None:
                continue
            if values.typecode == PAGED:
                paged_windows.append((values, head + span[0], head + span[1]))
                paged_asked.append(wanted)
                paged.append(True)
            else:
                windows.append((values, head + span[0], head + span[1]))
                asked.append(wanted)
                paged.append(False)
        means, pcts = figures_apart(paged, paged_windows, paged_asked, windows, asked) if paged else ([], [])
        if len(paged) < len(spans):  # nan where a key has no span
            means, pcts = _spread(spans, permilles, means, pcts)
        return WindowColumns(spans, means, pcts)

    def _samples_between(self, key: SeriesKey, start: float, end: float) -> tuple[SeriesRing, int, int]:
        """The series and the [lo, hi) indexes of its values in the window; NotEnoughData when
        there is none."""
        ring = self._series.get(key)
        if ring is None:
            raise NotEnoughData("no series %s" % (key,))
        lo, hi = ring.bounds(start, end)
        if lo == hi:
            raise NotEnoughData("no samples in [%.3f, %.3f]" % (start, end))
        return ring, lo, hi

    def latest(self, key: SeriesKey) -> Sample | None:
        ring = self._series.get(key)
        last = None if ring is None else ring.last()
        return None if last is None else Sample(key, last[0], last[1])

    def latest_value(self, key: SeriesKey) -> tuple[float, float] | None:
        """(timestamp, value) of the newest sample, without building a Sample (scrapes)."""
        ring = self._series.get(key)
        return None if ring is None else ring.last()

    def latest_values(self, keys: Sequence[SeriesKey], oldest: float) -> list[float | None]:
        """The newest value of each series, None where it has none at or after `oldest`: a
        strategy's reads of a thousand pods in one call (the ring's last() inlined)."""
        out: list[float | None] = []
        for ring in self._rings_of(keys):
            count = 0 if ring is None else len(ring.values) - ring.head
            if ring is None or not count:
                out.append(None)
                continue
            timeline = ring.timeline
            out.append(ring.value(-1) if timeline.ts[ring.first - timeline.dropped + count - 1] >= oldest else None)
        return out

    def _rings_of(self, keys: Sequence[SeriesKey]) -> list[SeriesRing | None]:
        """The series of `keys`. A tuple's are looked up once while no series comes or goes:
        the strategies ask with the same tuples round after round, and hashing a thousand
        keys was a third of their reads."""
        if type(keys) is not tuple:
            return list(map(self._series.get, keys))
        kept = self._kept_rings(keys)
        if kept is not None:
            return kept
        rings = list(map(self._series.get, keys))
        self._keep_rings(keys, rings)
        return rings

    def _keep_rings(self, keys: tuple[SeriesKey, ...], rings: list[SeriesRing | None]) -> None:
        """Keep the lookup of `keys`. The lookups kept are all of one generation: those made
        before a series came or went can never be used again (_kept_rings) and are dropped
        here, not left until the cap: each holds its key tuple and a list as long (at 1,000
        pods 18 of them, ~0.5 MiB, stayed from the pods' delivery through a quiet daemon)."""
        kept = self._ring_lists
        if len(kept) >= _RING_LISTS_KEPT or self._ring_lists_generation != self._generation:
            kept.clear()
            self._ring_lists_generation = self._generation
        kept[id(keys)] = (keys, self._generation, rings)

    def _kept_rings(self, keys: Sequence[SeriesKey]) -> list[SeriesRing | None] | None:
        """The series of `keys` as looked up before, None unless no series came or went since
        (or the lookup is still being made slice by slice)."""
        known = self._ring_lists.get(id(keys))
        if known is None or known[0] is not keys or known[1] != self._generation:
            return None
        return known[2] if len(known[2]) == len(keys) else None

    def _rings_in_slices(self, keys: tuple[SeriesKey, ...], start: int, stop: int | None) -> list[SeriesRing | None]:
        """The series of keys[start:stop]; slices appended in order from 0 while no series
        comes or goes add up to the tuple's kept lookup, so that no one slice looks up the
        whole tuple (at 3,000 pods ~9,000 keys held the loop 17-31 ms in one go)."""
        rings = list(map(self._series.get, keys[start:stop]))
        known = self._ring_lists.get(id(keys))
        if not start:
            self._keep_rings(keys, list(rings))
        elif (known is not None and known[0] is keys and known[1] == self._generation
              and len(known[2]) == start):
            known[2].extend(rings)
        return rings

    def keys(self, metric: str | Metric) -> tuple[SeriesKey, ...]:
        name = metric.value if isinstance(metric, Metric) else metric
        return tuple(self._by_metric.get(name, ()))

    def shared_key(self, key: SeriesKey) -> SeriesKey:
        """The store's own object for `key` while it holds that series, else `key`: readers
        that keep keys a pod (the reports, the exporter) keep no copy of their own (at 1,000
        pods, scraped, ~10,000 equal copies of the collectors' keys, 72 bytes each). A reader
        that asks before the series' first sample keeps its own until it derives the pod again."""
        by_metric = self._by_metric.get(key.metric)
        return key if by_metric is None else by_metric.get(key, key)

    # ------------------------------------------------------------------ lifecycle of series
    def __len__(self) -> int:
        return len(self._series)

    def sample_count(self) -> int:
        return sum(len(ring) for ring in self._series.values())

    def forget_pod(self, pod_uid: str) -> int:
        """Drop every series of a pod and its containers (the pod is gone); samples of the
        pod that come for a while after (a round begun before) make no new series."""
        self._bury(pod_uid)
        keys = self._by_pod.pop(pod_uid, [])  # taken whole: no removal one key at a time
        for key in keys:
            self._drop(key)
        return len(keys)

    def _bury(self, object_id: str) -> None:
        gone = self._gone
        now = gone[object_id] = self._clock()
        gone.move_to_end(object_id)
        oldest_kept = now - GONE_SECONDS
        while len(gone) > GONE_CAPACITY or next(iter(gone.values())) < oldest_kept:
            gone.popitem(last=False)

    def _still_gone(self, key: SeriesKey) -> bool:
        """Whether the key's pod, or its container, was forgotten less than GONE_SECONDS ago."""
        gone = self._gone
        since = self._clock() - GONE_SECONDS
        when = gone.get(key.pod_uid)
        if when is not None and when >= since:
            return True
        when = gone.get(key.container_id) if key.container_id else None
        return when is not None and when >= since

    def forget_container(self, pod_uid: str, container_id: str) -> int:
        """Drop a container's series (it is gone); as forget_pod, samples of it that come for
        a while after make no new series."""
        self._bury(container_id)
        keys = [key for key in self._by_pod.get(pod_uid, ()) if key.container_id == container_id]
        for key in keys:
            self._drop(key)
        return len(keys)

    def expire(self, now: float | None = None) -> int:
        """Trim every series to its retention; drop series left empty. Returns series dropped."""
        now = self._clock() if now is None else now
        emptied = []
        for key, ring in self._series.items():
            ring.drop_before(now - ring.keeping.retention)
            if len(ring) == 0:
                emptied.append(key)
        for key in emptied:
            self._drop(key, on_disk=False)  # the disk expires on its own clock
        return len(emptied)

    def _new_series(self, key: SeriesKey, timeline: Timeline | None = None) -> SeriesRing:
        if len(self._series) >= self.policy.max_series:
            self._evict_stalest()
        policy = self.policy
        keeping = Keeping(policy.capacity(key), policy.seconds(key), policy.persists(key), policy.persist_every(key))
        keeping = self._keepings.setdefault(keeping.as_tuple(), keeping)  # one per kind of series
        ring = SeriesRing(keeping, timeline, policy.in_pages(key))
        self._series[key] = ring
        self._generation += 1
        self._by_metric[key.metric][key] = key
        if key.pod_uid:
            self._by_pod[key.pod_uid].append(key)
        return ring

    def _evict_stalest(self) -> None:
        def last_ts(item: tuple[SeriesKey, SeriesRing]) -> float:
            last = item[1].last()
            return float("-inf") if last is None else last[0]

        key, _ = min(self._series.items(), key=last_ts)
        if self.evicted_series == 0:
            log.warning("metric_cache_series_limit", max_series=self.policy.max_series, evicted=str(key))
        self.evicted_series += 1
        self._drop(key)

    def _drop(self, key: SeriesKey, on_disk: bool = True) -> None:
        ring = self._series.pop(key, None)
        if ring is None:
            return
        self._generation += 1
        ring.release()
        by_metric = self._by_metric.get(key.metric)
        if by_metric is not None:
            by_metric.pop(key, None)
            if not by_metric:
                del self._by_metric[key.metric]
        if key.pod_uid:
            by_pod = self._by_pod.get(key.pod_uid)
            if by_pod is not None:
                by_pod.remove(key)
                if not by_pod:
                    del self._by_pod[key.pod_uid]
        if on_disk and self._persistence is not None and self.policy.persists(key):
            with self._pending_lock:
                self._forgotten.append(key)

    # ------------------------------------------------------------------ disk
    def _queue(self, rows: list[tuple[SeriesKey, float, float, float]]) -> None:
        if not rows or self._persistence is None:
            return
        with self._pending_lock:
            self._pending.extend(rows)
            excess = len(self._pending) - self._max_pending
            if excess > 0:
                del self._pending[:excess]
                self.dropped_pending += excess

    def _restore(self, persistence: SqlitePersistence) -> None:
        """The file's samples, round by round as they were written, appended as a collector's
        round is: the series of one round share its timestamps again (each restored series
        used to keep a copy of its own for as long as it lived, ~4.6 MiB at 1,000 pods), and
        a restored sample counts as written (the rows it makes due are already on disk)."""
        now = self._clock()
        restored = 0
        with self._disk_lock:
            for timestamp, samples in persistence.load(now):
                self._put([(key, timestamp, value) for key, value in samples])
                restored += len(samples)
        log.info("metric_cache_restored", path=str(persistence.path), series=len(self._series), samples=restored)

    def flush(self) -> int:
        """Write the rows queued since the last flush (worker thread). Returns rows written."""
        if self._persistence is None:
            return 0
        with self._pending_lock:
            rows, self._pending = self._pending, []
            forgotten, self._forgotten = self._forgotten, []
        if forgotten:  # rows queued before a series was forgotten must not revive it
            gone = set(forgotten)
            rows = [row for row in rows if row[0] not in gone]
        with self._disk_lock:
            if forgotten:
                self._persistence.forget(forgotten)
            try:
                return self._persistence.write(rows)
            except Exception:
                with self._pending_lock:  # keep them for the next try, within the bound
                    self._pending[:0] = rows
                raise

    def expire_on_disk(self, now: float | None = None) -> int:
        if self._persistence is None:
            return 0
        with self._disk_lock:
            return self._persistence.expire(self._clock() if now is None else now)

    def close(self) -> None:
        """Flush what is pending and close the file (call once, after the last append)."""
        if self._persistence is None:
            return
        try:
            self.flush()
        finally:
            with self._disk_lock:
                self._persistence.close()
            self._persistence = None
