"""CPU throttling of pods and containers: throttled periods over periods between two reads
of cpu.stat (koordlet's podthrottled collector). koordlet reads them every second; here
every container interval (10 s by default): the pods' ratios feed only /metrics, scraped
less often than that, and the containers' CPU burst, which takes a ratio that old. The
cpu.stat files are read as one batch (no fd kept) and parsed in slices (framework.Round)."""

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
from system.errors import SystemFileError
from system.usage_reader import UsagePaths, UsageReader, parse_throttle_counts


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
        replies = yield (self._batches.get(dirs, "cpu.stat", lambda: [p.cpu_stat for p in paths]),)
        assert replies is not None
        slices = Slices()
        samples: list[tuple[SeriesKey, float]] = []
        previous, current = self._last, dict[tuple[str, str], tuple[SeriesKey, tuple[int, int]]]()
        for i, ((uid, container_id, _), text) in enumerate(zip(objects, replies[0])):
            if slices.over(i):
                yield None
            if text is None:
                continue
            try:
                counts = parse_throttle_counts(text)
            except (ValueError, SystemFileError):
                continue
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
