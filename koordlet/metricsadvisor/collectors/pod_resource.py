"""Pod and container CPU usage (delta of cumulative cgroup CPU time) and memory working set
(usage - inactive_file), every 1 s; plus the system figures (node minus all pods).

Pods and containers come from the states informer; a cgroup that vanished between the
listing and the read is skipped (normal life). Series keys are made once per object and
kept only while the object is listed, so nothing here grows with pod churn.
"""

from __future__ import annotations

from koordlet.metriccache.api import Metric, MetricCache, SeriesKey
from koordlet.metricsadvisor.collectors.node_resource import NODE_CPU, NODE_MEMORY
from koordlet.metricsadvisor.framework import CollectContext, PeriodicCollector, pods_and_reader
from koordlet.metricsadvisor.rates import cores_from_ns
from koordlet.statesinformer.api import StatesInformer
from system.errors import SystemFileError
from system.usage_reader import UsageReader

SYS_CPU = SeriesKey.of(Metric.SYS_CPU_USAGE_CORES)
SYS_MEMORY = SeriesKey.of(Metric.SYS_MEMORY_USAGE_BYTES)


# memory.stat (for inactive_file) is re-read every this many cycles per object, staggered
# so that each cycle refreshes 1/STAT_EVERY of the objects; usage is read every cycle.
STAT_EVERY = 10


class _Tracked:
    """Keys and the last CPU reading of one pod or container."""

    __slots__ = ("cpu_key", "memory_key", "last_t", "last_ns", "phase")

    def __init__(self, cpu_key: SeriesKey, memory_key: SeriesKey, phase: int) -> None:
        self.cpu_key = cpu_key
        self.memory_key = memory_key
        self.last_t = 0.0
        self.last_ns = -1
        self.phase = phase


class PodResourceCollector(PeriodicCollector):
    name = "podresource"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self._reader: UsageReader | None = None
        self._states: StatesInformer | None = None
        self._cache: MetricCache | None = None
        self._tracked: dict[tuple[str, str], _Tracked] = {}
        self._cycle = 0
        self.unreadable = 0  # reads skipped (cgroup gone or file missing) in the last run

    def setup(self, ctx: CollectContext) -> None:
        self._reader, self._states = pods_and_reader(ctx)
        self._cache = ctx.cache

    def collect(self, now: float) -> list[tuple[SeriesKey, float]]:
        assert self._states is not None
        samples: list[tuple[SeriesKey, float]] = []
        previous, tracked = self._tracked, dict[tuple[str, str], _Tracked]()
        self.unreadable = 0
        self._cycle += 1
        pods_cpu: float | None = 0.0
        pods_memory: float | None = 0.0
        for pod in self._states.pods():
            if not pod.cgroup_parent:
                continue
            cores, memory = self._read(previous, tracked, (pod.uid, ""), pod.cgroup_parent, now, samples,
                                       Metric.POD_CPU_USAGE_CORES, Metric.POD_MEMORY_USAGE_BYTES, pod.uid, "")
            # a pod without a figure this tick (new, or unreadable) makes the sum unknown
            pods_cpu = None if cores is None or pods_cpu is None else pods_cpu + cores
            pods_memory = None if memory is None or pods_memory is None else pods_memory + memory
            for container in pod.running_containers:
                if container.cgroup_dir:
                    self._read(previous, tracked, (pod.uid, container.id), container.cgroup_dir, now,
                               samples, Metric.CONTAINER_CPU_USAGE_CORES,
                               Metric.CONTAINER_MEMORY_USAGE_BYTES, pod.uid, container.id)
        self._tracked = tracked
        samples.extend(self._system(now, pods_cpu, pods_memory))
        return samples

    def _read(self, previous: dict, tracked: dict, ident: tuple[str, str], cgroup_dir: str, now: float,
              samples: list[tuple[SeriesKey, float]], cpu_metric: Metric, memory_metric: Metric,
              pod_uid: str, container_id: str) -> tuple[float | None, float | None]:
        """Append this object's samples; returns (cores, bytes), None for what was not measured."""
        assert self._reader is not None
        entry = previous.get(ident)
        if entry is None:
            entry = _Tracked(SeriesKey.of(cpu_metric, pod_uid, container_id),
                             SeriesKey.of(memory_metric, pod_uid, container_id), len(previous) + len(tracked))
        tracked[ident] = entry
        try:
            usage_ns, working_set = self._reader.cpu_ns_and_working_set(
                cgroup_dir, (self._cycle + entry.phase) % STAT_EVERY == 0)
            memory = float(working_set)
        except SystemFileError:
            self.unreadable += 1
            return None, None
        samples.append((entry.memory_key, memory))
        cores = None
        if entry.last_ns >= 0:
            cores = cores_from_ns(entry.last_t, entry.last_ns, now, usage_ns)
        entry.last_t, entry.last_ns = now, usage_ns
        if cores is not None:
            samples.append((entry.cpu_key, cores))
        return cores, memory

    def _system(self, now: float, pods_cpu: float | None,
                pods_memory: float | None) -> list[tuple[SeriesKey, float]]:
        """Node minus pods, when the node figure is from this tick (node runs first)."""
        assert self._cache is not None
        out = []
        for node_key, sys_key, pods in ((NODE_CPU, SYS_CPU, pods_cpu), (NODE_MEMORY, SYS_MEMORY, pods_memory)):
            if pods is None:
                continue
            node = self._cache.latest(node_key)
            if node is not None and abs(node.timestamp - now) <= self.interval / 2:
                out.append((sys_key, max(0.0, node.value - pods)))
        return out
