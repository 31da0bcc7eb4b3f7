"""Pod and container CPU usage (delta of cumulative cgroup CPU time) and memory working set
(usage - inactive_file), every 1 s; plus the system figures (node minus all pods).

Pods and containers come from the states informer; a cgroup that vanished between the
listing and the read is skipped (normal life). Series keys are made once per object and
kept only while the object is listed, so nothing here grows with pod churn. The files are
read as batches (no fd kept) and parsed in slices (framework.Round).
"""

from __future__ import annotations

from typing import Generator

from koordlet.metriccache.api import Metric, MetricCache, SeriesKey
from koordlet.metricsadvisor.collectors.node_resource import NODE_CPU, NODE_MEMORY
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
from koordlet.metricsadvisor.rates import cores_from_ns
from koordlet.statesinformer.api import StatesInformer
from system.errors import SystemFileError
from system.file_io import FileBatch
from system.usage_reader import UsagePaths, UsageReader, cpu_ns_of, inactive_of, working_set_of

SYS_CPU = SeriesKey.of(Metric.SYS_CPU_USAGE_CORES)
SYS_MEMORY = SeriesKey.of(Metric.SYS_MEMORY_USAGE_BYTES)


# memory.stat (for inactive_file) is re-read every this many cycles per object, staggered
# so that each cycle refreshes 1/STAT_EVERY of the objects; usage is read every cycle.
STAT_EVERY = 10


class _Tracked:
    """Keys, the last CPU reading and the last inactive_file figure of one pod or container."""

    __slots__ = ("cpu_key", "memory_key", "last_t", "last_ns", "inactive")

    def __init__(self, cpu_key: SeriesKey, memory_key: SeriesKey) -> None:
        self.cpu_key = cpu_key
        self.memory_key = memory_key
        self.last_t = 0.0
        self.last_ns = -1
        self.inactive = -1  # -1 before the first memory.stat read


class PodResourceCollector(RoundCollector):
    name = "podresource"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self._reader: UsageReader | None = None
        self._states: StatesInformer | None = None
        self._cache: MetricCache | None = None
        self._tracked: dict[tuple[str, str], _Tracked] = {}
        self._batches = Batches()
        self._cycle = 0
        self.unreadable = 0  # reads skipped (cgroup gone or file missing) in the last run

    def setup(self, ctx: CollectContext) -> None:
        self._reader, self._states = pods_and_reader(ctx)
        self._cache = ctx.cache


    def round(self, now: float) -> Round:
        assert self._states is not None and self._reader is not None
        objects = pod_objects(self._states)
        dirs = tuple(obj[2] for obj in objects)
        paths: list[UsagePaths] = yield from sliced_map(self._reader.paths, dirs)
        previous, tracked = self._tracked, dict[tuple[str, str], _Tracked]()
        entries: list[_Tracked] = yield from sliced_map(
            lambda obj: self._entry(previous, tracked, obj[0], obj[1]), objects)
        self._tracked = tracked
        self._cycle += 1
        phase = self._cycle % STAT_EVERY
        due = range(phase, len(objects), STAT_EVERY)  # staggered memory.stat refresh
        first = [i for i, entry in enumerate(entries) if entry.inactive < 0 and i % STAT_EVERY != phase]
        batches = (self._batches.get(dirs, "usage", lambda: [f for p in paths for f in (p.cpu, p.memory)]),
                   self._batches.get(dirs, phase, lambda: [paths[i].memory_stat for i in due]),
                   FileBatch([paths[i].memory_stat for i in first]))
        replies = yield batches
        assert replies is not None
        usage, stats = replies[0], replies[1] + replies[2]
        stale: set[int] = yield from _refresh_inactive(entries, paths, list(due) + first, stats)
        slices = Slices()
        samples: list[tuple[SeriesKey, float]] = []
        pods_cpu: float | None = 0.0
        pods_memory: float | None = 0.0
        self.unreadable = 0
        for i, (entry, (_, container_id, _)) in enumerate(zip(entries, objects)):
            if slices.over(i):
                yield None
            cores, memory = _sample(entry, paths[i], usage[2 * i], usage[2 * i + 1], i in stale, now, samples)
            if memory is None:
                self.unreadable += 1
            if not container_id:  # a pod without a figure this tick makes the sum unknown
                pods_cpu = None if cores is None or pods_cpu is None else pods_cpu + cores
                pods_memory = None if memory is None or pods_memory is None else pods_memory + memory
        samples.extend(self._system(now, pods_cpu, pods_memory))
        return samples

    @staticmethod
    def _entry(previous: dict, tracked: dict, pod_uid: str, container_id: str) -> _Tracked:
        ident = (pod_uid, container_id)
        entry = previous.get(ident)
        if entry is None:
            if container_id:
                entry = _Tracked(SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod_uid, container_id),
                                 SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, pod_uid, container_id))
            else:
                entry = _Tracked(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid, ""),
                                 SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, pod_uid, ""))
        tracked[ident] = entry
        return entry

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


def _refresh_inactive(entries: list[_Tracked], paths: list[UsagePaths], indices: list[int],
                      texts: list[bytes | None]) -> Generator[None, object, set[int]]:
    """Store the memory.stat figures read (in slices: all of them when every cgroup is new);
    the indices whose refresh failed (unreadable)."""
    failed = set()
    slices = Slices()
    for n, (i, text) in enumerate(zip(indices, texts)):
        if slices.over(n):
            yield None
        try:
            if text is None:
                raise ValueError
            entries[i].inactive = inactive_of(text, paths[i].inactive_key)
        except (ValueError, SystemFileError):
            failed.add(i)
    return failed


def _sample(entry: _Tracked, paths: UsagePaths, cpu: bytes | None, memory: bytes | None, stale: bool, now: float,
            samples: list[tuple[SeriesKey, float]]) -> tuple[float | None, float | None]:
    """Append one object's samples; (cores, bytes), None for what was not measured."""
    if cpu is None or memory is None or stale or entry.inactive < 0:
        return None, None
    try:
        usage_ns = cpu_ns_of(cpu, paths.cpu_v2)
        working_set = float(working_set_of(int(memory), entry.inactive))
    except (ValueError, SystemFileError):
        return None, None
    samples.append((entry.memory_key, working_set))
    cores = None
    if entry.last_ns >= 0:
        cores = cores_from_ns(entry.last_t, entry.last_ns, now, usage_ns)
    entry.last_t, entry.last_ns = now, usage_ns
    if cores is not None:
        samples.append((entry.cpu_key, cores))
    return cores, working_set
