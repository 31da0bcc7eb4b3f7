"""Pod and container CPU usage (delta of cumulative cgroup CPU time) and memory working set
(usage - inactive_file): pods every 1 s, containers every `container_interval` (default
10 s, a tenth of them each round); plus the system figures (node minus all pods). koordlet
reads containers every second too; at 1,000 pods that is 4,000 of the 6,000 usage files a
second, and nothing but CPU burst (which reads them with a matching age) and the opt-in
container series of /metrics uses them.

Pods and containers come from the states informer; a cgroup that vanished between the
listing and the read is skipped (normal life). Series keys are made once per object and
kept only while the object is listed, so nothing here grows with pod churn. The files are
read as batches (no fd kept) and parsed in slices (framework.Round).
"""

from __future__ import annotations

from functools import partial
from typing import Generator

from koordlet.metriccache.api import Metric, MetricCache, SeriesKey
from koordlet.metricsadvisor.collectors.node_resource import NODE_CPU, NODE_MEMORY
from koordlet.metricsadvisor.framework import (
    Batches,
    CollectContext,
    Columns,
    Listed,
    Listing,
    Round,
    RoundCollector,
    Slices,
    Turns,
    pods_and_reader,
    sliced_filter,
    sliced_flat,
)
from koordlet.metricsadvisor.rates import cores_from_ns
from koordlet.statesinformer.api import StatesInformer
from system.file_io import VALUES_PER_FILE
from system.usage_reader import UsagePaths, UsageReader, working_set_of

SYS_CPU = SeriesKey.of(Metric.SYS_CPU_USAGE_CORES)
SYS_MEMORY = SeriesKey.of(Metric.SYS_MEMORY_USAGE_BYTES)


# memory.stat (for inactive_file) is re-read about every this many seconds per object,
# staggered so that each round refreshes an even share of the objects; usage every read.
STAT_EVERY = 10


class _Tracked:
    """Keys, the last CPU reading and the last inactive_file figure of one pod or container."""

    __slots__ = ("cpu_key", "memory_key", "last_t", "last_ns", "inactive", "reads")

    def __init__(self, cpu_key: SeriesKey, memory_key: SeriesKey, offset: int) -> None:
        self.cpu_key = cpu_key
        self.memory_key = memory_key
        self.last_t = 0.0
        self.last_ns = -1
        self.inactive = -1  # -1 before the first memory.stat read
        self.reads = offset  # usage reads so far, from a staggered start

    def stat_due(self, stat_every: int) -> bool:
        return self.inactive < 0 or self.reads % stat_every == 0


class PodResourceCollector(RoundCollector):
    name = "podresource"

    def __init__(self, interval: float, container_interval: float | None = None) -> None:
        super().__init__(interval)
        self._reader: UsageReader | None = None
        self._states: StatesInformer | None = None
        self._cache: MetricCache | None = None
        self._listing: Listing[UsagePaths, _Tracked] | None = None
        self._batches = Batches()
        self._turns = Turns.of(interval, container_interval)
        # each turn's indices into the listing they were made for
        self._listed: Listed[UsagePaths, _Tracked] | None = None
        # phase -> (pods, containers) read, and the keys of the samples they give
        self._due: dict[int, tuple[list[int], list[int], tuple[SeriesKey, ...]]] = {}
        self._cycle = 0
        self._born = 0  # objects tracked so far: spreads their memory.stat turns
        self.unreadable = 0  # reads skipped (cgroup gone or file missing) in the last run

    def setup(self, ctx: CollectContext) -> None:
        self._reader, self._states = pods_and_reader(ctx)
        self._listing = Listing(self._reader.paths, self._entry)
        self._cache = ctx.cache

    def round(self, now: float) -> Round:
        assert self._states is not None and self._listing is not None
        listed = yield from self._listing.get(self._states)
        if listed is not self._listed:
            self._listed, self._due = listed, {}
        objects, dirs, paths, entries = listed.objects, listed.dirs, listed.paths, listed.entries
        cycle, turns = self._cycle, self._turns
        self._cycle += 1
        phase = turns.phase(cycle)
        due = self._due.get(phase)
        if due is None:  # in slices, as the listing: 3,000 objects after a pod came or went
            in_turn = yield from turns.due_sliced(objects, cycle)
            pods_in = yield from sliced_filter(lambda i: not objects[i][1], in_turn)
            containers_in = yield from sliced_filter(lambda i: bool(objects[i][1]), in_turn)
            keys = tuple((yield from sliced_flat(lambda i: (entries[i].memory_key, entries[i].cpu_key),
                                                 pods_in + containers_in)))
            due = self._due[phase] = (pods_in, containers_in, keys + (SYS_CPU, SYS_MEMORY))
        pods_due, containers_due, keys = due
        container_stat_every = max(1, STAT_EVERY // turns.every)
        stat = yield from sliced_filter(lambda i: entries[i].stat_due(STAT_EVERY), pods_due)
        stat += yield from sliced_filter(lambda i: entries[i].stat_due(container_stat_every), containers_due)
        # the pods' usage files in one batch for every round, each turn's containers in one
        # of their own: a batch per turn holding every pod kept the pods' paths ten times
        usage = partial(_usage_specs, paths)
        batches = ((yield from self._batches.made(dirs, "pods", pods_due, usage)),
                   (yield from self._batches.made(dirs, ("containers", phase), containers_due, usage)),
                   (yield from self._batches.made(dirs, ("stat", phase, tuple(stat)), stat,
                                                  partial(_stat_specs, paths))))
        replies = yield batches
        assert replies is not None
        stale: set[int] = yield from _refresh_inactive(entries, stat, replies[2])
        slices = Slices()
        values: list[float | None] = [None] * len(keys)  # per object its memory, then its cpu
        pods_cpu: float | None = 0.0
        pods_memory: float | None = 0.0
        self.unreadable = 0
        done = 0
        for indices, (read, status) in ((pods_due, replies[0]), (containers_due, replies[1])):
            for n, i in enumerate(indices):
                if slices.over(done + n):
                    yield None
                entry = entries[i]
                entry.reads += 1
                cores = memory = None
                if not (status[2 * n] or status[2 * n + 1] or i in stale or entry.inactive < 0):
                    at = 2 * VALUES_PER_FILE * n  # the object's cpu file, then its memory file
                    cpu_ns = read[at] * 1000 if paths[i].cpu_v2 else read[at]
                    cores, memory = _sample(entry, cpu_ns, read[at + VALUES_PER_FILE], now)
                    values[2 * (done + n)] = memory
                    values[2 * (done + n) + 1] = cores
                else:
                    self.unreadable += 1
                if indices is pods_due:  # a pod without a figure this tick makes the sum unknown
                    pods_cpu = None if cores is None or pods_cpu is None else pods_cpu + cores
                    pods_memory = None if memory is None or pods_memory is None else pods_memory + memory
            done += len(indices)
        values[-2:] = self._system(now, pods_cpu, pods_memory)
        return Columns(keys, values)

    def _entry(self, pod_uid: str, container_id: str) -> _Tracked:
        """A newly listed object's entry."""
        self._born += 1
        if container_id:
            return _Tracked(SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod_uid, container_id),
                            SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, pod_uid, container_id), self._born)
        return _Tracked(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid, ""),
                        SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, pod_uid, ""), self._born)

    def _system(self, now: float, pods_cpu: float | None,
                pods_memory: float | None) -> list[float | None]:
        """Node minus pods (SYS_CPU, SYS_MEMORY), when the node figure is from this tick
        (node runs first)."""
        assert self._cache is not None
        out: list[float | None] = []
        for node_key, pods in ((NODE_CPU, pods_cpu), (NODE_MEMORY, pods_memory)):
            node = None if pods is None else self._cache.latest(node_key)
            if pods is None or node is None or abs(node.timestamp - now) > self.interval / 2:
                out.append(None)
            else:
                out.append(max(0.0, node.value - pods))
        return out


def _usage_specs(paths: list[UsagePaths], i: int) -> tuple[tuple[str, str], ...]:
    """Object i's CPU time (v1 cpuacct.usage; v2 cpu.stat's usage_usec) and memory usage files."""
    return (paths[i].cpu, "usage_usec" if paths[i].cpu_v2 else ""), (paths[i].memory, "")


def _stat_specs(paths: list[UsagePaths], i: int) -> tuple[tuple[str, str], ...]:
    """Object i's memory.stat and the inactive_file key it holds."""
    return ((paths[i].memory_stat, paths[i].inactive_key),)


def _refresh_inactive(entries: list[_Tracked], indices: list[int],
                      reply: tuple[list[int], list[int]]) -> Generator[None, object, set[int]]:
    """Store the memory.stat figures read (in slices: all of them when every cgroup is new);
    the indices whose refresh failed (unreadable)."""
    values, status = reply
    failed = set()
    slices = Slices()
    for n, i in enumerate(indices):
        if slices.over(n):
            yield None
        if status[n]:
            failed.add(i)
        else:
            entries[i].inactive = values[VALUES_PER_FILE * n]
    return failed


def _sample(entry: _Tracked, usage_ns: int, memory: int, now: float) -> tuple[float | None, float]:
    """One object's samples: (cores or None before a second reading, bytes)."""
    working_set = float(working_set_of(memory, entry.inactive))
    cores = None
    if entry.last_ns >= 0:
        cores = cores_from_ns(entry.last_t, entry.last_ns, now, usage_ns)
    entry.last_t, entry.last_ns = now, usage_ns
    return cores, working_set
