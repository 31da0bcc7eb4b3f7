"""CPU throttling of pods and containers: throttled periods over periods between two reads
of cpu.stat (koordlet's podthrottled collector), every 1 s."""

from __future__ import annotations

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.framework import CollectContext, PeriodicCollector, pods_and_reader
from koordlet.metricsadvisor.rates import throttled_ratio
from koordlet.statesinformer.api import StatesInformer
from system.errors import SystemFileError
from system.usage_reader import UsageReader


class PodThrottledCollector(PeriodicCollector):
    name = "podthrottled"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self._reader: UsageReader | None = None
        self._states: StatesInformer | None = None
        self._last: dict[tuple[str, str], tuple[SeriesKey, tuple[int, int]]] = {}

    def setup(self, ctx: CollectContext) -> None:
        self._reader, self._states = pods_and_reader(ctx)

    def collect(self, now: float) -> list[tuple[SeriesKey, float]]:
        assert self._states is not None
        samples: list[tuple[SeriesKey, float]] = []
        previous, current = self._last, dict[tuple[str, str], tuple[SeriesKey, tuple[int, int]]]()
        for pod in self._states.pods():
            uid = pod.uid
            self._one(samples, previous, current, (uid, ""), pod.cgroup_parent, Metric.POD_CPU_THROTTLED_RATIO)
            for container in pod.running_containers:
                self._one(samples, previous, current, (uid, container.id), container.cgroup_dir,
                          Metric.CONTAINER_CPU_THROTTLED_RATIO)
        self._last = current
        return samples

    def _one(self, samples: list, previous: dict, current: dict, ident: tuple[str, str], cgroup_dir: str,
             metric: Metric) -> None:
        assert self._reader is not None
        if not cgroup_dir:
            return
        try:
            counts = self._reader.throttle_counts(cgroup_dir)
        except SystemFileError:
            return
        last = previous.get(ident)
        if last is None:
            current[ident] = (SeriesKey.of(metric, ident[0], ident[1]), counts)
            return
        key = last[0]
        current[ident] = (key, counts)
        ratio = throttled_ratio(last[1], counts)
        if ratio is not None:
            samples.append((key, ratio))
