"""The collector framework: what a collector is, and the one scheduler that runs them.

A collector has a name, a feature gate (None = always on), an interval, ``setup`` (raise
``CollectorUnsupported`` to be disabled with one log line) and ``collect(now)`` returning
(series key, value) pairs, all stamped ``now`` in the metric cache. A collector with ``window > 0`` is run in two phases:
``begin(now)`` at its tick and ``collect(now)`` ``window`` seconds later (CPI counts a
10 s window every 60 s), without holding the loop in between.

One periodic task (util.periodic) per interval runs that interval's collectors in
registration order (node before pods, so derived figures see the same tick), appends the
samples and records the CPU time of each run; a windowed collector has its own task.

A collector over pods also has ``round(now)``: a generator (sans-IO) that yields a
tuple of batches to be read (``FileBatch``: bytes per file; ``ValueBatch``: the numbers
parsed in C, no bytes per file; the driver sends back each batch's ``read()``), ``None`` where
the loop may run other callbacks, and returns the samples. The scheduler reads the
batches in a thread (the C batch reader releases the GIL: at 3,000 cgroups the 9,000
opens cost ~90 ms, which used to hold the loop and delay NRI answers) and the round
parses in slices of about SLICE_SECONDS (``Slices``); ``collect(now)`` drives the same
generator inline for tools and tests. Collectors without ``round`` read no cgroup file
(node: procfs; network: /proc/net/dev) or are off by default (CPI, whose windows open
cgroup dirs for perf) and run inline: an open() of a cgroup file can
wait in the kernel for tens of ms while the runtime makes and removes cgroups, so every
collector that reads one (the BE tier's too) does it in a round's batch.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from typing import Any, Callable, Generator, Generic, Iterable, Protocol, Sequence, TypeVar, Union

import structlog

from koordlet.metriccache.api import MetricCache, Sample, SeriesKey
from koordlet.metrics.client import CollectorRegistry
from koordlet.statesinformer.api import StatesInformer
from koordlet.statesinformer.model import PodInfo
from koordlet.util.host_facts import HostFacts
from koordlet.util.periodic import Periodic
from koordlet.util.steps import run_steps
from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader
from system.file_io import FileBatch, KeptFdPool, ValueBatch
from system.host import Host
from system.usage_reader import UsageReader

log = structlog.get_logger(__name__)

# A single run longer than this is logged (once per collector): the loop is blocked meanwhile.
SLOW_RUN_SECONDS = 0.1
# How long a round runs on the loop before it yields (checked every SLICE_CHECK objects).
SLICE_SECONDS = 0.002
SLICE_CHECK = 32
# Samples a round's results go into the metric cache with per yield: the PSI round's 6,000
# at 1,000 pods held the loop ~8 ms in one append.
APPEND_SLICE = 512
# Objects a round's bookkeeping (the usage round's turns) handles between two looks at the
# clock: its steps cost 0.1-1 us per object, and a look (a chunk's call, copy and clock read) ~0.4 us.
BOOKKEEPING_CHUNK = 8 * SLICE_CHECK
# A listing's pod kept as it was is a lookup and a copy (~1 us); an object listed anew
# makes its paths and entry, several times that: it counts this many kept pods.
NEW_OBJECT_WORK = 8

T = TypeVar("T")
U = TypeVar("U")


class Columns:
    """A round's samples as two parallel columns: ``keys`` kept by the collector while its
    listing holds (the same tuple round after round: the metric cache looks its series up
    once), ``values`` filled each round, None where a series has no sample this round."""

    __slots__ = ("keys", "values")

    def __init__(self, keys: tuple[SeriesKey, ...], values: list[float | None]) -> None:
        self.keys = keys
        self.values = values

    def __len__(self) -> int:  # the samples, not the positions
        return len(self.values) - self.values.count(None)

    def pairs(self, start: int = 0, stop: int | None = None) -> list[tuple[SeriesKey, float]]:
        """(key, value) of the samples at positions [start, stop)."""
        return [(key, value) for key, value in zip(self.keys[start:stop], self.values[start:stop])
                if value is not None]


Samples = Union[Sequence[tuple[SeriesKey, float]], Columns]
Batch = Union[FileBatch, ValueBatch]
# What a round yields: batches to read (answered with each one's read()) or None (a slice ends).
Request = Union[tuple[Batch, ...], None]
Round = Generator[Request, "list[Any] | None", Samples]


# When the driver last resumed the round running now (drive, drive_async): a slice is
# measured from there, so that pieces sliced one after the other in a round (the listing,
# the due lists, the batches, the parsing) add up to one slice, not to one each.
_RESUMED = [0.0]


def _resumed_now() -> None:
    _RESUMED[0] = time.perf_counter()


class Slices:
    """Tells a round when its slice has had its time (SLICE_SECONDS since the driver last
    resumed it); the clock is read every SLICE_CHECK objects only."""

    __slots__ = ("_seconds",)

    def __init__(self) -> None:
        self._seconds = SLICE_SECONDS

    def over(self, index: int) -> bool:
        if index % SLICE_CHECK:
            return False
        return time.perf_counter() - _RESUMED[0] >= self._seconds


def sliced_chunks(fn: Callable[[Sequence[T], int], Iterable[U]], items: Sequence[T],
                  size: int = SLICE_CHECK) -> Generator[None, object, list[U]]:
    """What ``fn(chunk, start)`` gives for each ``size`` items from ``start`` (a multiple of
    SLICE_CHECK), one list, with yields to the loop between chunks (a chunk's work runs at
    comprehension speed)."""
    slices = Slices()
    out: list[U] = []
    for start in range(0, len(items), size):
        if slices.over(start):
            yield None
        out.extend(fn(items[start:start + size], start))
    return out


def sliced_map(fn: Callable[[T], U], items: Sequence[T]) -> Generator[None, object, list[U]]:
    """[fn(item) for item in items] with yields to the loop (the throttling round's series
    keys after a listing change: ~3,000 at 1,000 pods)."""
    return (yield from sliced_chunks(lambda chunk, _: map(fn, chunk), items))


def sliced_flat(fn: Callable[[T], Iterable[U]], items: Sequence[T]) -> Generator[None, object, list[U]]:
    """[x for item in items for x in fn(item)] with yields to the loop."""
    return (yield from sliced_chunks(lambda chunk, _: chain.from_iterable(map(fn, chunk)), items))


def sliced_filter(keep: Callable[[T], bool], items: Sequence[T]) -> Generator[None, object, list[T]]:
    """[item for item in items if keep(item)] with yields to the loop."""
    return (yield from sliced_chunks(lambda chunk, _: filter(keep, chunk), items))


def in_slices(count: int, step: Callable[[int, int], object]) -> Generator[None, object, None]:
    """step(start, stop) over [0, count) BOOKKEEPING_CHUNK positions at a time, with yields
    to the loop between chunks (a round's columns: list slices and comprehensions)."""
    slices = Slices()
    for start in range(0, count, BOOKKEEPING_CHUNK):
        if slices.over(start):
            yield None
        step(start, min(count, start + BOOKKEEPING_CHUNK))


def drive(round_: Round) -> Samples:
    """Run a round inline: reads on this thread, no yielding (tools, tests, benches)."""
    reply: list[Any] | None = None
    while True:
        _resumed_now()
        try:
            request = round_.send(reply)
        except StopIteration as stop:
            return stop.value
        reply = None if request is None else _read_all(request)


def _read_all(batches: tuple[Batch, ...]) -> list[Any]:
    return [batch.read() for batch in batches]


@dataclass(slots=True)
class Holds:
    """The stretches a round held the loop: the longest (wall s) and their CPU (s)."""

    longest: float = 0.0
    cpu: float = 0.0
    count: int = 0
    _wall0: float = 0.0
    _cpu0: float = 0.0

    def begin(self) -> None:
        self._wall0, self._cpu0 = time.perf_counter(), time.thread_time()

    def end(self) -> None:
        self.longest = max(self.longest, time.perf_counter() - self._wall0)
        self.cpu += time.thread_time() - self._cpu0
        self.count += 1


async def drive_async(round_: Round, holds: Holds) -> Samples:
    """Run a round on the loop: batches read in a thread, a yield to the loop after each
    slice; ``holds`` measures the stretches in between."""
    reply: list[Any] | None = None
    while True:
        holds.begin()
        _resumed_now()
        try:
            request = round_.send(reply)
        except StopIteration as stop:
            return stop.value
        finally:
            holds.end()
        if request is None:
            reply = None
            await asyncio.sleep(0)
        else:
            reply = await asyncio.to_thread(_read_all, request)


class CollectorUnsupported(Exception):
    """This host cannot give what the collector needs; it is disabled, the daemon runs on."""


@dataclass(slots=True)
class CollectContext:
    """What collectors read from. ``files``/``reader`` are None on a host without cgroups;
    ``states`` is None until a states informer exists (then only node-level collectors run)."""

    host: Host
    cache: MetricCache
    node_name: str
    files: CgroupFiles | None = None
    reader: CgroupReader | None = None  # general reads (PSI, cpu.max, cpusets)
    states: StatesInformer | None = None
    usage: UsageReader | None = None  # the per-second usage and throttling reads
    fd_pool: KeptFdPool | None = None  # the daemon's kept fds: perf fds budget what it leaves
    facts: HostFacts | None = None  # CPUs and topology, probed once by the daemon


class Collector(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def gate(self) -> str | None: ...

    @property
    def interval(self) -> float: ...

    @property
    def window(self) -> float:  # 0 for one-phase collectors
        ...

    def setup(self, ctx: CollectContext) -> None: ...

    def begin(self, now: float) -> None: ...

    def collect(self, now: float) -> Sequence[tuple[SeriesKey, float]]: ...


class PeriodicCollector:
    """Base of one-phase collectors: no window, nothing to begin."""

    gate: str | None = None
    window = 0.0

    def __init__(self, interval: float) -> None:
        self.interval = interval

    def begin(self, now: float) -> None:
        pass


class RoundCollector(PeriodicCollector):
    """Base of the collectors that read cgroup files: `round(now)` is the work (see the module doc), and
    `collect(now)` runs it inline."""

    def round(self, now: float) -> Round:
        raise NotImplementedError

    def collect(self, now: float) -> Sequence[tuple[SeriesKey, float]]:
        return pairs_of(drive(self.round(now)))


def pairs_of(samples: Samples) -> Sequence[tuple[SeriesKey, float]]:
    """A round's samples as (key, value) pairs."""
    return samples.pairs() if isinstance(samples, Columns) else samples


def pods_and_reader(ctx: CollectContext) -> tuple[UsageReader, StatesInformer]:
    """What per-pod collectors need, or CollectorUnsupported saying which is missing."""
    if ctx.usage is None:
        raise CollectorUnsupported("no cgroup hierarchy on this host")
    if ctx.states is None:
        raise CollectorUnsupported("no states informer: pods are unknown")
    return ctx.usage, ctx.states


# One cgroup a per-pod collector reads: (pod uid, container id or "" for the pod, its dir).
CgroupObject = tuple[str, str, str]


def objects_of(pod: PodInfo) -> list[CgroupObject]:
    """The pod, if it has a cgroup, then its running containers that have one."""
    if not pod.cgroup_parent:
        return []
    return [(pod.uid, "", pod.cgroup_parent)] + [(pod.uid, c.id, c.cgroup_dir)
                                                 for c in pod.running_containers if c.cgroup_dir]


P = TypeVar("P")
E = TypeVar("E")


@dataclass(frozen=True, slots=True)
class Listed(Generic[P, E]):
    """What a per-pod round reads: the objects, their dirs, each one's paths and entry."""

    objects: list[CgroupObject]
    dirs: tuple[str, ...]
    paths: list[P]
    entries: list[E]


class Listing(Generic[P, E]):
    """A round's objects, made again only when the informer's pods() is another tuple (it
    hands back the same one while nothing listed changed). The informer hands back the same
    PodInfo for a pod that did not change: its objects, paths and entries are copied from the
    last listing as they were. A changed pod's objects are listed again, and one still
    listed (the same pod, container and dir) keeps its paths and entry (series keys, last
    readings): at 1,000 pods a pod coming or changing makes paths and entries for it alone,
    and the rest costs a lookup and a copy per pod."""

    def __init__(self, paths: Callable[[str], P], entry: Callable[[str, str], E],
                 containers: bool = True) -> None:
        self._paths, self._entry, self._containers = paths, entry, containers
        self._pods: object = None
        # pod uid -> (the pod object listed, its objects' first position, how many) in `listed`
        self._spans: dict[str, tuple[PodInfo, int, int]] = {}
        self.listed: Listed[P, E] = Listed([], (), [], [])

    def get(self, states: StatesInformer) -> Generator[None, object, Listed[P, E]]:
        pods = states.pods()
        if pods is self._pods:
            return self.listed
        last, spans = self.listed, self._spans
        objects: list[CgroupObject] = []
        paths: list[P] = []
        entries: list[E] = []
        dirs: list[str] = []
        listed_spans: dict[str, tuple[PodInfo, int, int]] = {}
        run = [0, 0]  # kept pods next to each other in the last listing: copied in one go

        def copy_run() -> None:
            at, stop = run
            if stop > at:
                objects.extend(last.objects[at:stop])
                paths.extend(last.paths[at:stop])
                entries.extend(last.entries[at:stop])
                dirs.extend(last.dirs[at:stop])
            run[0] = run[1] = 0

        slices = Slices()
        work = next_look = 0  # a kept pod counts 1, a listed one 1 + NEW_OBJECT_WORK an object
        for pod in pods:
            if work >= next_look:
                next_look = work + SLICE_CHECK
                if slices.over(0):
                    copy_run()
                    yield None
            span = spans.get(pod.uid)
            first = len(objects) + run[1] - run[0]
            if span is not None and span[0] is pod:
                if span[1] != run[1]:
                    copy_run()
                    run[0] = run[1] = span[1]
                run[1] += span[2]
                work += 1
            else:
                copy_run()
                self._list_pod(pod, span, last, objects, paths, entries, dirs)
                work += 1 + NEW_OBJECT_WORK * (len(objects) - first)
            listed_spans[pod.uid] = (pod, first, len(objects) + run[1] - run[0] - first)
        copy_run()
        self._pods, self._spans, self.listed = pods, listed_spans, Listed(objects, tuple(dirs), paths, entries)
        return self.listed

    def _list_pod(self, pod: PodInfo, span: tuple[PodInfo, int, int] | None, last: Listed[P, E],
                  objects: list[CgroupObject], paths: list[P], entries: list[E], dirs: list[str]) -> None:
        """A new or changed pod's objects onto the lists; those it had in `last` (at `span`)
        keep their paths and entries (a container whose dir changed is another cgroup: new
        paths, no last reading)."""
        had = {} if span is None else {last.objects[k]: k for k in range(span[1], span[1] + span[2])}
        for obj in objects_of(pod):
            if obj[1] and not self._containers:
                continue
            k = had.get(obj)
            objects.append(obj)
            dirs.append(obj[2])
            paths.append(self._paths(obj[2]) if k is None else last.paths[k])
            entries.append(self._entry(obj[0], obj[1]) if k is None else last.entries[k])


class Turns:
    """Which objects a round reads: every pod each round, each container every `every`
    rounds, a different share of the containers each round (by a checksum of the id, so a
    container keeps its turn as others come and go). A collector keeps each turn's indices
    while its listing holds: `due` runs at most `every` times per listing."""

    __slots__ = ("every",)

    def __init__(self, every: int) -> None:
        self.every = max(1, every)

    @classmethod
    def of(cls, interval: float, container_interval: float | None) -> Turns:
        return cls(1 if container_interval is None else round(container_interval / interval))

    def phase(self, cycle: int) -> int:
        return cycle % self.every

    def due(self, objects: Sequence[CgroupObject], cycle: int) -> list[int]:
        """Indices into ``objects`` read in round ``cycle``."""
        return run_steps(self.due_sliced(objects, cycle))

    def due_sliced(self, objects: Sequence[CgroupObject], cycle: int) -> Generator[None, object, list[int]]:
        """``due``, yielding to the loop (3,000 checksums: ~0.5 ms)."""
        every = self.every
        if every == 1:
            return list(range(len(objects)))
        phase = cycle % every
        return (yield from sliced_chunks(
            lambda objs, start: [i for i, (_, container_id, _) in enumerate(objs, start)
                                 if not container_id or zlib.crc32(container_id.encode()) % every == phase],
            objects, BOOKKEEPING_CHUNK))


B = TypeVar("B", FileBatch, ValueBatch)


class Batches:
    """Batches kept while the cgroups they read stay the same: making one costs a
    microsecond or two per path, reading it a few. At most MAX_BATCHES are kept (the
    usage round has one per turn and per set of memory.stat files due, which repeat)."""

    MAX_BATCHES = 64

    def __init__(self) -> None:
        self._key: tuple[str, ...] = ()
        self._batches: dict[object, Any] = {}

    def get(self, dirs: tuple[str, ...], name: object, make: Callable[[], B]) -> B:
        """The batch kept under ``name``, or ``make()``'s while ``dirs`` stay the same."""
        batch = self._kept(dirs, name)
        if batch is None:
            batch = self._batches[name] = make()
        return batch

    def made(self, dirs: tuple[str, ...], name: object, items: Sequence[T],
             specs: Callable[[T], Sequence[Any]],
             kind: Callable[[list[Any]], Batch] | None = None) -> Generator[None, object, Any]:
        """The batch kept under ``name``, or a ``kind`` (ValueBatch, FileBatch) of ``specs(item)``
        for every item, its paths made in slices (the usage round's 2,000 pod files at 1,000
        pods: ~1.5 ms; the PSI round's 3,000 paths ~1 ms)."""
        batch = self._kept(dirs, name)
        if batch is None:
            batch = self._batches[name] = (kind or ValueBatch)((yield from sliced_flat(specs, items)))
        return batch

    def _kept(self, dirs: tuple[str, ...], name: object) -> Any:
        if dirs != self._key or len(self._batches) >= self.MAX_BATCHES:
            self._key, self._batches = dirs, {}
        return self._batches.get(name)


@dataclass(slots=True)
class CollectorStats:
    runs: int = 0
    errors: int = 0
    overruns: int = 0  # ticks skipped because the previous run was late
    samples: int = 0
    last_cpu_seconds: float = 0.0
    total_cpu_seconds: float = 0.0
    last_wall_seconds: float = 0.0
    last_longest_hold_seconds: float = 0.0  # the longest stretch the last run held the loop
    started: bool = False  # one successful collect done
    slow_logged: bool = False
    last_error: str = ""


@dataclass(slots=True)
class _Entry:
    collector: Collector
    stats: CollectorStats = field(default_factory=CollectorStats)
    window_open: bool = False


class Scheduler:
    """Runs collectors on the event loop. ``clock`` gives sample timestamps (unix seconds).

    One periodic task per interval runs that interval's one-phase collectors in
    registration order; a windowed collector has a task of its own (begin, the window, collect)."""

    def __init__(self, cache: MetricCache, clock: Callable[[], float] = time.time,
                 registry: CollectorRegistry | None = None) -> None:
        self._cache = cache
        self._clock = clock
        self._registry = registry
        self._entries: list[_Entry] = []
        self._loops: list[Periodic] = []

    def add(self, collector: Collector) -> None:
        self._entries.append(_Entry(collector))

    @property
    def collectors(self) -> tuple[Collector, ...]:
        return tuple(entry.collector for entry in self._entries)

    def stats(self) -> dict[str, CollectorStats]:
        return {entry.collector.name: entry.stats for entry in self._entries}

    def all_started(self) -> bool:
        """Every collector has collected successfully once (its data is in the cache)."""
        return all(entry.stats.started for entry in self._entries)

    def all_tried(self) -> bool:
        """Every collector has had its first turn, successful or not."""
        return all(entry.stats.started or entry.stats.errors for entry in self._entries)

    def start(self) -> None:
        groups: dict[float, list[_Entry]] = {}
        for entry in self._entries:
            collector = entry.collector
            if collector.window > 0:
                self._loops.append(Periodic(f"collect-{collector.name}", partial(self._run_windowed, entry),
                                            collector.interval, registry=self._registry))
            else:
                groups.setdefault(collector.interval, []).append(entry)
        for interval, entries in groups.items():
            name = "collect-" + "+".join(entry.collector.name for entry in entries)
            self._loops.append(Periodic(name, partial(self._run_group, entries, interval), interval,
                                        registry=self._registry))
        for loop in self._loops:
            loop.start()

    async def stop(self) -> None:
        for loop in self._loops:
            await loop.stop()
        self._loops.clear()
        for entry in self._entries:  # a CPI window left open holds perf fds
            if entry.window_open:
                _close_quietly(entry.collector)
                entry.window_open = False

    def running(self) -> bool:
        return bool(self._loops) and all(loop.alive() for loop in self._loops)

    async def _run_group(self, entries: list[_Entry], interval: float) -> None:
        for n, entry in enumerate(entries):
            if n:  # the loop's turn between two collectors: one's last append and the next one's start
                await asyncio.sleep(0)  # held it ~10 ms as one callback (bench.daemon_holds --callbacks)
            if isinstance(entry.collector, RoundCollector):
                await self._finish_round(entry, entry.collector)
            else:
                self._finish(entry)
            if entry.stats.last_wall_seconds > interval:  # the next tick comes late, never piles up
                entry.stats.overruns += 1

    async def _run_windowed(self, entry: _Entry) -> None:
        started = time.thread_time()
        try:
            entry.collector.begin(self._clock())
        except Exception as exc:
            self._failed(entry, exc)
            return
        finally:
            entry.stats.total_cpu_seconds += time.thread_time() - started
        entry.window_open = True
        await asyncio.sleep(entry.collector.window)
        entry.window_open = False
        self._finish(entry)

    def _finish(self, entry: _Entry) -> None:
        stats = entry.stats
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            now = self._clock()
            samples = entry.collector.collect(now)
            append_samples(self._cache, now, samples)
        except Exception as exc:
            self._failed(entry, exc)
            return
        finally:
            stats.last_cpu_seconds = time.thread_time() - cpu
            stats.total_cpu_seconds += stats.last_cpu_seconds
            stats.last_wall_seconds = stats.last_longest_hold_seconds = time.perf_counter() - wall
            stats.runs += 1
        self._done(entry, samples)

    async def _finish_round(self, entry: _Entry, collector: RoundCollector) -> None:
        """A round in slices: the CPU counted is the loop thread's in the round's own
        stretches (not the reading thread's, nor other tasks' in between); the slow warning
        goes by the longest stretch, not the wall time."""
        stats = entry.stats
        holds = Holds()
        wall = time.perf_counter()
        try:
            now = self._clock()
            samples = await drive_async(collector.round(now), holds)
            await append_in_slices(self._cache, now, samples, holds)
        except Exception as exc:
            self._failed(entry, exc)
            return
        finally:
            stats.last_cpu_seconds = holds.cpu
            stats.total_cpu_seconds += holds.cpu
            stats.last_wall_seconds = time.perf_counter() - wall
            stats.last_longest_hold_seconds = holds.longest
            stats.runs += 1
        self._done(entry, samples)

    def _done(self, entry: _Entry, samples: Samples) -> None:
        stats = entry.stats
        stats.samples += len(samples)
        stats.started = True
        if stats.last_longest_hold_seconds > SLOW_RUN_SECONDS and not stats.slow_logged:
            stats.slow_logged = True
            log.warning("collector_slow", collector=entry.collector.name,
                        wall_ms=round(stats.last_wall_seconds * 1e3, 1),
                        hold_ms=round(stats.last_longest_hold_seconds * 1e3, 1),
                        cpu_ms=round(stats.last_cpu_seconds * 1e3, 1))

    def _failed(self, entry: _Entry, exc: Exception) -> None:
        stats = entry.stats
        stats.errors += 1
        text = repr(exc)
        if text != stats.last_error:  # one line per new kind of failure, not one per tick
            log.error("collector_failed", collector=entry.collector.name, error=text)
        stats.last_error = text


async def append_in_slices(cache: MetricCache, now: float, samples: Samples, holds: Holds) -> None:
    """A round's samples into the cache APPEND_SLICE positions at a time, the loop given
    back between slices; the appending counted in `holds`."""
    positions = len(samples.keys) if isinstance(samples, Columns) else len(samples)
    for start in range(0, positions, APPEND_SLICE):
        if start:
            await asyncio.sleep(0)
        holds.begin()
        append_samples(cache, now, samples, start, start + APPEND_SLICE)
        holds.end()


def append_samples(cache: MetricCache, now: float, samples: Samples, start: int = 0, stop: int | None = None) -> None:
    """Samples [start, stop) of a run into the cache, all stamped ``now`` (positions of the
    columns for Columns)."""
    if isinstance(samples, Columns):
        append_columns = getattr(cache, "append_columns", None)
        if append_columns is not None:  # MetricStore: each tuple's series looked up once
            append_columns(now, samples.keys, samples.values, start, stop)
            return
        samples = samples.pairs(start, stop)
    elif start or stop is not None:
        samples = samples[start:stop]
    append_at = getattr(cache, "append_at", None)
    if append_at is not None:  # MetricStore: no Sample object per value
        append_at(now, samples)
    else:
        cache.append([Sample(key, now, value) for key, value in samples])


def _close_quietly(collector: Collector) -> None:
    close = getattr(collector, "close", None)
    if close is not None:
        try:
            close()
        except Exception as exc:
            log.warning("collector_close_failed", collector=collector.name, error=repr(exc))
