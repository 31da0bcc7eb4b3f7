"""CPU throttling of pods and containers: throttled periods over periods between two reads
of cpu.stat (koordlet's podthrottled collector). koordlet reads them every second; here
every container interval (10 s by default): the pods' ratios feed only /metrics, scraped
less often than that, and the containers' CPU burst, which takes a ratio that old. The
cpu.stat files are read and parsed as one batch in C (no fd kept, no bytes per file), the
ratios made in slices (framework.Round)."""

from __future__ import annotations

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.framework import (
    Batches,
    CollectContext,
    Columns,
    Listing,
    Round,
    RoundCollector,
    Slices,
    pods_and_reader,
    sliced_map,
)
from koordlet.metricsadvisor.rates import throttled_ratio
from koordlet.statesinformer.api import StatesInformer
from system.file_io import VALUES_PER_FILE
from system.usage_reader import UsagePaths


class _Last:
    """One object's series key and its last (nr_periods, nr_throttled), None before a reading."""

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
        self._keys_of: object = None

    def setup(self, ctx: CollectContext) -> None:
        reader, self._states = pods_and_reader(ctx)
        self._listing = Listing(reader.paths, _Last)

    def round(self, now: float) -> Round:
        assert self._states is not None and self._listing is not None
        listed = yield from self._listing.get(self._states)
        replies = yield ((yield from self._batches.made(listed.dirs, "cpu.stat", listed.paths, _cpu_stat_spec)),)
        assert replies is not None
        values, status = replies[0]
        slices = Slices()
        if self._keys_of is not listed:  # in slices: 3,000 keys after a pod came or went
            self._keys_of, self._keys = listed, tuple((yield from sliced_map(_key_of, listed.entries)))
        keys = self._keys
        samples: list[float | None] = [None] * len(listed.entries)
        for i, entry in enumerate(listed.entries):
            if slices.over(i):
                yield None
            if status[i]:  # gone, or no cpu controller: the next reading starts afresh
                entry.counts = None
                continue
            at = VALUES_PER_FILE * i
            counts = (values[at], values[at + 1])
            last, entry.counts = entry.counts, counts
            if last is not None:
                ratio = throttled_ratio(last, counts)
                samples[i] = ratio
        return Columns(keys, samples)


def _cpu_stat_spec(paths: UsagePaths) -> tuple[tuple[str, str]]:
    return ((paths.cpu_stat, "nr_periods nr_throttled"),)


def _key_of(entry: _Last) -> SeriesKey:
    return entry.key
