"""CPU throttling of pods and containers: throttled periods over periods between two reads
of cpu.stat (koordlet's podthrottled collector). koordlet reads them every second; here
every container interval (10 s by default): the pods' ratios feed only /metrics, scraped
less often than that, and the containers' CPU burst, which takes a ratio that old. The
cpu.stat files are read and parsed as one batch in C (no fd kept, no bytes per file), the
ratios made in slices (framework.Round)."""

from __future__ import annotations

from functools import partial

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.framework import (
    Batches,
    CollectContext,
    Columns,
    Listed,
    Listing,
    Round,
    RoundCollector,
    in_slices,
    pods_and_reader,
    sliced_map,
)
from koordlet.statesinformer.api import StatesInformer
from system.file_io import VALUES_PER_FILE
from system.usage_reader import UsagePaths


class _Last:
    """One object's series key and its last (nr_periods, nr_throttled), None before a reading
    (kept here between listings; the collector's columns hold them while its listing stands)."""

    __slots__ = ("key", "counts")

    def __init__(self, pod_uid: str, container_id: str) -> None:
        metric = Metric.CONTAINER_CPU_THROTTLED_RATIO if container_id else Metric.POD_CPU_THROTTLED_RATIO
        self.key = SeriesKey.of(metric, pod_uid, container_id)
        self.counts: tuple[int, int] | None = None


class PodThrottledCollector(RoundCollector):
    name = "podthrottled"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self._states: StatesInformer | None = None
        self._listing: Listing[UsagePaths, _Last] | None = None
        self._batches = Batches()
        self._keys: tuple[SeriesKey, ...] = ()  # the listing's keys column, kept while it holds
        self._listed: Listed[UsagePaths, _Last] | None = None
        # the listed objects' last nr_periods and nr_throttled in listing order (-1: none), so
        # that a round works on columns, not object by object; put back into the entries
        # before the listing changes (an object listed again keeps its last counts)
        self._periods: list[int] = []
        self._throttled: list[int] = []

    def setup(self, ctx: CollectContext) -> None:
        reader, self._states = pods_and_reader(ctx)
        self._listing = Listing(reader.paths, _Last)

    def round(self, now: float) -> Round:
        assert self._states is not None and self._listing is not None
        listed = yield from self._listing.get(self._states)
        if self._listed is not listed:  # in slices: 3,000 objects after a pod came or went
            if self._listed is not None:
                yield from in_slices(len(self._periods), partial(self._put_back, self._listed.entries))
            self._listed, self._periods, self._throttled = listed, [], []
            yield from in_slices(len(listed.entries), partial(self._take, listed.entries))
            self._keys = tuple((yield from sliced_map(_key_of, listed.entries)))
        replies = yield ((yield from self._batches.made(listed.dirs, "cpu.stat", listed.paths, _cpu_stat_spec)),)
        assert replies is not None
        samples: list[float | None] = []
        yield from in_slices(len(listed.entries), partial(self._ratios, replies[0], samples))
        return Columns(self._keys, samples)

    def _ratios(self, reply: tuple[list[int], list[int]], samples: list[float | None], start: int, stop: int) -> None:
        """The ratios of objects [start, stop) onto `samples` (koordlet's podthrottled, as
        rates.throttled_ratio: None without a last reading or where a counter went back);
        their counts moved on, -1 where cpu.stat could not be read (gone, or no cpu
        controller: the next reading starts afresh)."""
        values, status = reply
        at, end = VALUES_PER_FILE * start, VALUES_PER_FILE * stop
        periods, throttled, failed = values[at:end:VALUES_PER_FILE], values[at + 1:end:VALUES_PER_FILE], status[start:stop]
        samples += [None if code or last_p < 0 or p < last_p or t < last_t else
                    0.0 if p == last_p else min(1.0, (t - last_t) / (p - last_p))
                    for p, t, last_p, last_t, code in zip(periods, throttled, self._periods[start:stop],
                                                          self._throttled[start:stop], failed)]
        if any(failed):
            periods = [-1 if code else p for p, code in zip(periods, failed)]
        self._periods[start:stop], self._throttled[start:stop] = periods, throttled

    def _take(self, entries: list[_Last], start: int, stop: int) -> None:
        counts = [entry.counts for entry in entries[start:stop]]
        self._periods += [-1 if pair is None else pair[0] for pair in counts]
        self._throttled += [-1 if pair is None else pair[1] for pair in counts]

    def _put_back(self, entries: list[_Last], start: int, stop: int) -> None:
        for entry, periods, throttled in zip(entries[start:stop], self._periods[start:stop],
                                             self._throttled[start:stop]):
            entry.counts = None if periods < 0 else (periods, throttled)


def _cpu_stat_spec(paths: UsagePaths) -> tuple[tuple[str, str]]:
    return ((paths.cpu_stat, "nr_periods nr_throttled"),)


def _key_of(entry: _Last) -> SeriesKey:
    return entry.key
