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
    Round,
    RoundCollector,
    Slices,
    pod_objects,
    pods_and_reader,
    sliced_map,
)
from koordlet.metricsadvisor.rates import throttled_ratio
from koordlet.statesinformer.api import StatesInformer
from system.file_io import VALUES_PER_FILE, ValueBatch
from system.usage_reader import UsagePaths, UsageReader


class PodThrottledCollector(RoundCollector):
    name = "podthrottled"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self._reader: UsageReader | None = None
        self._states: StatesInformer | None = None
        self._last: dict[tuple[str, str], tuple[SeriesKey, tuple[int, int]]] = {}
        self._batches = Batches()

    def setup(self, ctx: CollectContext) -> None:
        self._reader, self._states = pods_and_reader(ctx)

    def round(self, now: float) -> Round:
        assert self._states is not None and self._reader is not None
        reader = self._reader
        objects = pod_objects(self._states)
        dirs = tuple(obj[2] for obj in objects)
        paths: list[UsagePaths] = yield from sliced_map(reader.paths, dirs)
        replies = yield (self._batches.get(
            dirs, "cpu.stat", lambda: ValueBatch([(p.cpu_stat, "nr_periods nr_throttled") for p in paths])),)
        assert replies is not None
        values, status = replies[0]
        slices = Slices()
        samples: list[tuple[SeriesKey, float]] = []
        previous, current = self._last, dict[tuple[str, str], tuple[SeriesKey, tuple[int, int]]]()
        for i, (uid, container_id, _) in enumerate(objects):
            if slices.over(i):
                yield None
            if status[i]:  # gone, or no cpu controller
                continue
            at = VALUES_PER_FILE * i
            counts = (values[at], values[at + 1])
            ident = (uid, container_id)
            last = previous.get(ident)
            if last is None:
                metric = Metric.CONTAINER_CPU_THROTTLED_RATIO if container_id else Metric.POD_CPU_THROTTLED_RATIO
                current[ident] = (SeriesKey.of(metric, uid, container_id), counts)
                continue
            key = last[0]
            current[ident] = (key, counts)
            ratio = throttled_ratio(last[1], counts)
            if ratio is not None:
                samples.append((key, ratio))
        self._last = current
        return samples
