"""CPU throttling of pods and containers: throttled periods over periods between two reads
of cpu.stat (koordlet's podthrottled collector), every 1 s."""

from __future__ import annotations

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.framework import CollectContext, PeriodicCollector, pods_and_reader
from koordlet.metricsadvisor.rates import throttled_ratio
from koordlet.statesinformer.api import StatesInformer
from system.cgroup_readers import Throttling
from system.errors import SystemFileError
from system.usage_reader import UsageReader


class PodThrottledCollector(PeriodicCollector):
    name = "podthrottled"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self._reader: UsageReader | None = None
        self._states: StatesInformer | None = None
        self._last: dict[tuple[str, str], tuple[SeriesKey, Throttling]] = {}

    def setup(self, ctx: CollectContext) -> None:
        self._reader, self._states = pods_and_reader(ctx)

    def collect(self, now: float) -> list[tuple[SeriesKey, float]]:
        assert self._states is not None and self._reader is not None
        samples: list[tuple[SeriesKey, float]] = []
        previous, current = self._last, {}
        for pod in self._states.pods():
            targets = [((pod.uid, ""), pod.cgroup_parent, Metric.POD_CPU_THROTTLED_RATIO)]
            targets.extend(((pod.uid, c.id), c.cgroup_dir, Metric.CONTAINER_CPU_THROTTLED_RATIO)
                           for c in pod.running_containers)
            for ident, cgroup_dir, metric in targets:
                if not cgroup_dir:
                    continue
                try:
                    reading = self._reader.throttling(cgroup_dir)
                except SystemFileError:
                    continue
                last = previous.get(ident)
                key = last[0] if last is not None else SeriesKey.of(metric, ident[0], ident[1])
                current[ident] = (key, reading)
                if last is not None:
                    ratio = throttled_ratio(last[1], reading)
                    if ratio is not None:
                        samples.append((key, ratio))
        self._last = current
        return samples
