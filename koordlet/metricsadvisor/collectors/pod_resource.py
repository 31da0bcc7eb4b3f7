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

from functools import partial, reduce
from operator import add
from typing import Generator

from koordlet.metriccache.api import Metric, MetricCache, SeriesKey
from koordlet.metricsadvisor.collectors.node_resource import NODE_CPU, NODE_MEMORY
from koordlet.metricsadvisor.framework import (
    BOOKKEEPING_CHUNK,
    Batches,
    CollectContext,
    Columns,
    Listed,
    Listing,
    Round,
    RoundCollector,
    Turns,
    in_slices,
    pods_and_reader,
    sliced_chunks,
    sliced_filter,
    sliced_map,
)
from koordlet.statesinformer.api import StatesInformer
from system.file_io import VALUES_PER_FILE
from system.usage_reader import UsagePaths, UsageReader

SYS_CPU = SeriesKey.of(Metric.SYS_CPU_USAGE_CORES)
SYS_MEMORY = SeriesKey.of(Metric.SYS_MEMORY_USAGE_BYTES)


# memory.stat (for inactive_file) is re-read about every this many seconds per object,
# staggered so that each round refreshes an even share of the objects; usage every read.
STAT_EVERY = 10


class _Tracked:
    """Keys, the last CPU reading and the last inactive_file figure of one pod or container
    (kept here between listings; a _Turn holds them while its listing stands)."""

    __slots__ = ("cpu_key", "memory_key", "last_t", "last_ns", "inactive", "reads")

    def __init__(self, cpu_key: SeriesKey, memory_key: SeriesKey, offset: int) -> None:
        self.cpu_key = cpu_key
        self.memory_key = memory_key
        self.last_t = 0.0
        self.last_ns = -1
        self.inactive = -1  # -1 before the first memory.stat read
        self.reads = offset  # usage reads so far, from a staggered start


class _Turn:
    """The objects one usage batch reads (every pod, or one turn's containers) and their
    figures as lists in the batch's order, so that a round works on columns (list slices
    and comprehensions) and not object by object: at 1,000 pods the per-object loop was
    most of the round's Python. The figures are taken from the entries as the turn is made
    (take) and put back into them (put_back) before the listing changes, so that an
    object listed again keeps its last readings. Each step works on positions [start,
    stop), so that a round can do it in slices."""

    __slots__ = ("indices", "entries", "v2", "last_t", "last_ns", "inactive", "reads")

    def __init__(self, indices: list[int]) -> None:
        self.indices = indices  # into the listing
        self.entries: list[_Tracked] = []
        self.v2: list[bool] = []
        self.last_t: list[float] = []
        self.last_ns: list[int] = []
        self.inactive: list[int] = []
        self.reads: list[int] = []

    def take(self, entries: list[_Tracked], paths: list[UsagePaths], start: int, stop: int) -> None:
        indices = self.indices[start:stop]
        mine = [entries[i] for i in indices]
        self.entries += mine
        self.v2 += [paths[i].cpu_v2 for i in indices]
        self.last_t += [entry.last_t for entry in mine]
        self.last_ns += [entry.last_ns for entry in mine]
        self.inactive += [entry.inactive for entry in mine]
        self.reads += [entry.reads for entry in mine]

    def put_back(self, start: int, stop: int) -> None:
        for entry, last_t, last_ns, inactive, reads in zip(self.entries[start:stop], self.last_t[start:stop],
                                                            self.last_ns[start:stop], self.inactive[start:stop],
                                                            self.reads[start:stop]):
            entry.last_t, entry.last_ns, entry.inactive, entry.reads = last_t, last_ns, inactive, reads

    def stat_due(self, stat_every: int, start: int, stop: int) -> list[int]:
        """Positions whose memory.stat is read this round: never read yet, or their turn."""
        return [k for k, reads, inactive in zip(range(start, stop), self.reads[start:stop], self.inactive[start:stop])
                if inactive < 0 or reads % stat_every == 0]

    def refresh_inactive(self, due: list[int], values: list[int], status: list[int], failed: set[int]) -> None:
        """Store the memory.stat figures read for positions `due` (values and status as the
        batch gave them for these files); those whose refresh failed into `failed`."""
        inactive = self.inactive
        for k, value, code in zip(due, values[::VALUES_PER_FILE], status):
            if code:
                failed.add(k)
            else:
                inactive[k] = value

    def samples(self, start: int, stop: int, read: list[int], status: list[int], failed: set[int],
                now: float) -> tuple[list[float | None], list[float | None]]:
        """(memory, cores) of positions [start, stop), None where an object has no figure
        (a file unreadable, its memory.stat refresh `failed`, or no memory.stat yet; cores
        also before a second reading); their last CPU readings moved on where read."""
        per_object = 2 * VALUES_PER_FILE  # its cpu file, then its memory file
        cpu = read[start * per_object:stop * per_object:per_object]
        memory = read[start * per_object + VALUES_PER_FILE:stop * per_object:per_object]
        v2 = self.v2[start:stop]
        if True in v2:  # cpu.stat's usage_usec
            cpu = [ns * 1000 if usec else ns for ns, usec in zip(cpu, v2)]
        inactive = self.inactive[start:stop]
        ok = [not (cpu_code or memory_code) and gone >= 0
              for cpu_code, memory_code, gone in zip(status[2 * start:2 * stop:2], status[2 * start + 1:2 * stop:2],
                                                      inactive)]
        for k in failed:
            if start <= k < stop:
                ok[k - start] = False
        last_t, last_ns = self.last_t[start:stop], self.last_ns[start:stop]
        working_sets = [(float(used - gone) if used > gone else 0.0) if good else None
                        for used, gone, good in zip(memory, inactive, ok)]
        cores = [(ns - last) / 1e9 / (now - then) if good and last >= 0 and now > then and ns >= last else None
                 for ns, last, then, good in zip(cpu, last_ns, last_t, ok)]
        if False in ok:  # what was not read keeps its last reading
            self.last_ns[start:stop] = [ns if good else last for ns, last, good in zip(cpu, last_ns, ok)]
            self.last_t[start:stop] = [now if good else then for then, good in zip(last_t, ok)]
        else:
            self.last_ns[start:stop] = cpu
            self.last_t[start:stop] = [now] * (stop - start)
        self.reads[start:stop] = [reads + 1 for reads in self.reads[start:stop]]
        return working_sets, cores


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
        self._due: dict[int, tuple[_Turn, _Turn, tuple[SeriesKey, ...]]] = {}
        self._pod_turn: _Turn | None = None  # every round's pods, shared by the phases' dues
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
            for turn in self._turns_made():
                yield from in_slices(len(turn.indices), turn.put_back)
            self._listed, self._due, self._pod_turn = listed, {}, None
        objects, dirs, paths, entries = listed.objects, listed.dirs, listed.paths, listed.entries
        cycle, turns = self._cycle, self._turns
        self._cycle += 1
        phase = turns.phase(cycle)
        due = self._due.get(phase)
        if due is None:  # in slices, as the listing: 3,000 objects after a pod came or went
            in_turn = yield from turns.due_sliced(objects, cycle)
            pods_in = yield from sliced_filter(lambda i: not objects[i][1], in_turn)
            containers_in = yield from sliced_filter(lambda i: bool(objects[i][1]), in_turn)
            # every object's memory series, then every object's CPU series: the metric cache
            # adds a run of series in one place (same first value and count) at one go, and the
            # CPU series of an object start a round after its memory series
            keys = tuple((yield from sliced_map(lambda i: entries[i].memory_key, pods_in + containers_in))) + tuple(
                (yield from sliced_map(lambda i: entries[i].cpu_key, pods_in + containers_in)))
            if self._pod_turn is None:  # every phase reads every pod
                self._pod_turn = _Turn(pods_in)
                yield from in_slices(len(pods_in), partial(self._pod_turn.take, entries, paths))
            containers = _Turn(containers_in)
            yield from in_slices(len(containers_in), partial(containers.take, entries, paths))
            due = self._due[phase] = (self._pod_turn, containers, keys + (SYS_CPU, SYS_MEMORY))
        pod_turn, container_turn, keys = due
        pods_due, containers_due = pod_turn.indices, container_turn.indices
        pods_stat = yield from _sliced_stat_due(pod_turn, STAT_EVERY)
        containers_stat = yield from _sliced_stat_due(container_turn, max(1, STAT_EVERY // turns.every))
        stat = [pods_due[k] for k in pods_stat] + [containers_due[k] for k in containers_stat]
        # the pods' usage files in one batch for every round, each turn's containers in one
        # of their own: a batch per turn holding every pod kept the pods' paths ten times
        usage = partial(_usage_specs, paths)
        batches = ((yield from self._batches.made(dirs, "pods", pods_due, usage)),
                   (yield from self._batches.made(dirs, ("containers", phase), containers_due, usage)),
                   (yield from self._batches.made(dirs, ("stat", phase, tuple(stat)), stat,
                                                  partial(_stat_specs, paths))))
        replies = yield batches
        assert replies is not None
        failed: tuple[set[int], set[int]] = (set(), set())
        for turn, stat_due, first, failures in ((pod_turn, pods_stat, 0, failed[0]),
                                                (container_turn, containers_stat, len(pods_stat), failed[1])):
            yield from in_slices(len(stat_due), partial(_refresh, turn, stat_due, replies[2], first, failures))
        values: list[float | None] = [None] * len(keys)  # the objects' memory, then their cpu, then the system's
        cpu_at = len(pods_due) + len(containers_due)
        sums: list[float | None] = [0.0, 0.0]  # the pods' cores and bytes
        self.unreadable = 0

        def sample(turn: _Turn, reply: tuple[list[int], list[int]], failures: set[int], done: int,
                   start: int, stop: int) -> None:
            memory, cores = turn.samples(start, stop, reply[0], reply[1], failures, now)
            values[done + start:done + stop] = memory
            values[cpu_at + done + start:cpu_at + done + stop] = cores
            self.unreadable += memory.count(None)
            if turn is pod_turn:  # a pod without a figure this tick makes the sum unknown
                for n, column in enumerate((cores, memory)):
                    total = sums[n]
                    sums[n] = None if total is None or None in column else reduce(add, column, total)

        yield from in_slices(len(pods_due), partial(sample, pod_turn, replies[0], failed[0], 0))
        yield from in_slices(len(containers_due), partial(sample, container_turn, replies[1], failed[1],
                                                           len(pods_due)))
        values[-2:] = self._system(now, sums[0], sums[1])
        return Columns(keys, values)

    def _turns_made(self) -> list[_Turn]:
        return ([self._pod_turn] if self._pod_turn is not None else []) + [due[1] for due in self._due.values()]

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


def _sliced_stat_due(turn: _Turn, stat_every: int) -> Generator[None, object, list[int]]:
    return (yield from sliced_chunks(lambda chunk, start: turn.stat_due(stat_every, start, start + len(chunk)),
                                     range(len(turn.indices)), BOOKKEEPING_CHUNK))


def _refresh(turn: _Turn, due: list[int], reply: tuple[list[int], list[int]], first: int, failed: set[int],
             start: int, stop: int) -> None:
    """turn.refresh_inactive of due[start:stop], whose memory.stat files are the stat batch's
    from `first` on."""
    values, status = reply
    turn.refresh_inactive(due[start:stop], values[VALUES_PER_FILE * (first + start):VALUES_PER_FILE * (first + stop)],
                          status[first + start:first + stop], failed)
