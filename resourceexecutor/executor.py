"""The one door for cgroup writes: cached, ordered, levelled, honest about failures.

Usage (one per daemon, built at wiring time):

    executor = ResourceExecutor(CgroupFiles(Host()), registry=metrics_registry)
    u = executor.updater("cpuset.cpus", "kubepods/pod1/c1", frozenset({0}))
    result = await executor.apply_batch([u, ...])        # levels derived from the dirs
    result = await executor.apply_levels([[qos], [pods], [containers]])   # explicit levels

The daemon's callers use the async methods: each runs the synchronous one of the same
batch in the executor's IO thread, the one thread that touches its write cache and kept
fds once it exists. An open() or write() of a cgroup file can wait in the kernel for tens
of ms while the runtime makes and removes cgroups; on the event loop that held every
other agent and containerd's requests. The synchronous methods are for tests, benches
and the IO thread itself; there is no lock.
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from operator import attrgetter
from typing import Any, TypeVar

import structlog
from prometheus_client.metrics import Histogram  # a submodule: see resourceexecutor.metrics
from prometheus_client.registry import CollectorRegistry

from resourceexecutor.batch_run import BatchRun
from resourceexecutor.dir_index import DirIndex
from resourceexecutor.file_io import CgroupFileIO, KeptFdFileIO
from resourceexecutor.levelled_order import Step, derive_levels, levelled_schedule
from resourceexecutor.metrics import ExecutorMetrics, HistogramFactory
from resourceexecutor.outcome import (
    BatchResult,
    Outcome,
    RollbackFailure,
    UpdateResult,
)
from resourceexecutor.updater import CacheKey, Updater, UpdaterFactory
from resourceexecutor.write_cache import CachePolicy, WriteCache
from system.cgroup_files import CgroupFiles
from system.cgroup_resource import CgroupResource
from system.cgroup_version import no_hierarchy
from system.errors import NotSupported, SystemFileError
from system.host import Host

log = structlog.get_logger(__name__)

_NAME_OF = attrgetter("name")
_T = TypeVar("_T")

# How many problem examples a batch summary log line carries.
_EXAMPLES_LOGGED = 3


class ResourceExecutor:
    """Writes cgroup values through a write-if-different cache, in a safe order."""

    def __init__(self, files: CgroupFiles, *,
                 registry: CollectorRegistry | None = None,
                 policy: CachePolicy | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 io: CgroupFileIO | None = None,
                 factory: UpdaterFactory | None = None,
                 histogram: HistogramFactory = Histogram) -> None:
        self.files = files
        self.factory = factory if factory is not None else UpdaterFactory(files)
        self.io: CgroupFileIO = io if io is not None else KeptFdFileIO()
        self.clock = clock
        self.cache = WriteCache(policy, clock)
        self.metrics = ExecutorMetrics(registry, histogram) if registry is not None else None
        self._unsupported: dict[CacheKey, float] = {}   # key -> when we found the file absent
        self._unsupported_logged: set[str] = set()      # resource names already logged
        self._unsupported_dirs = DirIndex()             # the keys of _unsupported, by cgroup
        self._thread: ThreadPoolExecutor | None = None  # the IO thread, made at the first async call
        self._owner: int | None = None                  # its ident: the only thread allowed to run a batch

    # ------------------------------------------------------------ building

    def updater(self, resource: str | CgroupResource, cgroup_dir: str, value: Any, *,
                strict: bool = False) -> Updater:
        """Shortcut for `self.factory.new(...)`."""
        return self.factory.new(resource, cgroup_dir, value, strict=strict)

    # ------------------------------------------------------------ updating

    def update(self, updater: Updater, *, use_cache: bool = True) -> UpdateResult:
        return self.update_batch((updater,), use_cache=use_cache)[0]

    def update_batch(self, updaters: Sequence[Updater], *, use_cache: bool = True,
                     rollback: bool = False) -> BatchResult:
        """Apply every updater; never stops at a failure.

        Plain resources are written in the given order, in one pass.
        Hierarchical ones (those with a merge rule) are levelled by directory
        depth: pass one top-down writes merged values, pass two bottom-up the
        exact ones.  `use_cache=False` trusts nothing earlier batches left in
        the cache: every file is read and compared (once per batch).  `rollback=True` restores, when
        any update ends INVALID or FAILED, every file this batch wrote.
        """
        return self._run(updaters, None, use_cache, rollback)

    def update_levels(self, levels: Sequence[Sequence[Updater]], *, use_cache: bool = True,
                      rollback: bool = False) -> BatchResult:
        """Like update_batch with explicit levels, outermost first (e.g. QoS, pod,
        container).  Plain resources are written in pass one at their level.
        Results are in the order of the flattened levels."""
        flat: list[Updater] = []
        groups: list[range] = []  # each level's positions in flat: made for every batch, read only when it has work
        for level in levels:
            start = len(flat)
            flat.extend(level)
            groups.append(range(start, len(flat)))
        return self._run(flat, groups, use_cache, rollback)

    # ------------------------------------------------------------ off the event loop

    async def apply_batch(self, updaters: Sequence[Updater], *, use_cache: bool = True,
                          rollback: bool = False) -> BatchResult:
        """`update_batch` in the IO thread."""
        return await self.in_io_thread(partial(self.update_batch, updaters, use_cache=use_cache, rollback=rollback))

    async def apply_levels(self, levels: Sequence[Sequence[Updater]], *, use_cache: bool = True,
                           rollback: bool = False) -> BatchResult:
        """`update_levels` in the IO thread."""
        return await self.in_io_thread(partial(self.update_levels, levels, use_cache=use_cache, rollback=rollback))

    async def read_in_thread(self, paths: Sequence[str]) -> list[str | None]:
        """The texts of these files (None: unreadable), read in one batch through this
        executor's IO in the IO thread."""
        return await self.in_io_thread(self.io.read_many, paths) if paths else []

    async def in_io_thread(self, fn: Callable[[], _T] | Callable[..., _T], *args: Any) -> _T:
        """fn(*args) in the IO thread, after every call queued before it. `fn` may use the
        synchronous methods (a reconcile chunk checks drift, then writes)."""
        return await asyncio.wrap_future(self._io_thread().submit(fn, *args))

    def forget_cgroup_soon(self, cgroup_dir: str) -> None:
        """`forget_cgroup` queued in the IO thread behind the batches before it (run now
        when there is no IO thread yet): for callbacks on the event loop."""
        if self._thread is None:
            self.forget_cgroup(cgroup_dir)
            return
        self._thread.submit(self.forget_cgroup, cgroup_dir).add_done_callback(_log_failure)

    def _io_thread(self) -> ThreadPoolExecutor:
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cgroup-io",
                                              initializer=self._claim)
        return self._thread

    def _claim(self) -> None:
        self._owner = threading.get_ident()

    async def aclose(self) -> None:
        """`close` in the IO thread, then the thread ends (a later async call makes another)."""
        thread = self._thread
        if thread is None:
            self.close()
            return
        await self.in_io_thread(self.close)
        self._thread = self._owner = None
        thread.shutdown(wait=False)

    def close(self) -> None:
        """Close files the IO keeps open (KeptFdFileIO); the executor stays usable."""
        self.io.close()

    def forget_cgroup(self, cgroup_dir: str) -> int:
        """Drop what we hold for a removed cgroup and everything below it: cache
        entries, "not supported" notes and (with KeptFdFileIO) open files.
        Returns how many cache entries went.  Costs that subtree, not the cache."""
        target = cgroup_dir.strip("/")
        keys = self.cache.forget_cgroup(target)
        noted = self._unsupported_dirs.pop_under(target)
        for key in noted:
            self._unsupported.pop(key, None)
        self._release_files(target, {key[0] for key in keys} | {key[0] for key in noted})
        return len(keys)

    def _release_files(self, cgroup_dir: str, names: set[str]) -> None:
        released: set[str] = set()
        for name in names:
            try:
                released.add(str(self.files.dir_path(name, cgroup_dir)))
            except SystemFileError:
                continue
        for prefix in released:
            self.io.release(prefix)

    # ------------------------------------------------------------ internals

    def _run(self, updaters: Sequence[Updater], explicit_levels: Sequence[Sequence[int]] | None,
             use_cache: bool, rollback: bool) -> BatchResult:
        if self._owner is not None and self._owner != threading.get_ident():
            raise RuntimeError("a batch outside the executor's IO thread: use apply_batch/apply_levels")
        started = time.perf_counter()
        now = self.clock()
        if self.cache.sweep_if_due(now) is not None:
            self._forget_old_unsupported(now)
            self.io.sweep()
        outcomes = [Outcome.SKIPPED] * len(updaters)
        if use_cache:
            todo = self.cache.misses(updaters, now)
        else:
            todo = list(range(len(updaters)))
        if not todo:
            result = BatchResult(updaters, outcomes)
            self._record(updaters, outcomes, todo, started)
            return result

        run = BatchRun(updaters, outcomes, self.io, self.cache, now, use_cache=use_cache,
                       rollback=rollback, unsupported=self._unsupported,
                       on_unsupported=self._note_unsupported)
        run.prefetch(todo)
        if explicit_levels is None:
            run.plain_pass([i for i in todo if updaters[i].merge is None])
        run.levelled_pass(self._schedule(updaters, todo, explicit_levels))

        rolled_back = False
        failures: tuple[RollbackFailure, ...] = ()
        if rollback and run.undo and run.problems:
            failures = run.restore()
            rolled_back = True
        result = BatchResult(updaters, outcomes, run.errors, run.writes, rolled_back, failures)
        self._log_batch(result, sorted(run.problems), run.gone)
        self._record(updaters, outcomes, todo, started)
        if self.metrics is not None and run.write_times:
            self.metrics.record_writes(run.write_times)
        return result

    @staticmethod
    def _schedule(updaters: Sequence[Updater], todo: list[int],
                  explicit_levels: Sequence[Sequence[int]] | None) -> list[tuple[Step, int]]:
        if explicit_levels is not None:
            wanted = set(todo)
            levels = [[i for i in level if i in wanted] for level in explicit_levels]
            levels = [level for level in levels if level]
            return levelled_schedule(levels, [u.merge is not None for u in updaters])
        # plain updates went through BatchRun.plain_pass already
        hierarchical = [i for i in todo if updaters[i].merge is not None]
        if not hierarchical:
            return []
        levels = derive_levels([updaters[i].cgroup_dir for i in hierarchical])
        levelled = levelled_schedule(levels, [True] * len(hierarchical))
        return [(step, hierarchical[position]) for step, position in levelled]

    def _forget_old_unsupported(self, now: float) -> None:
        oldest_kept = now - self.cache.policy.expire_after
        for key in [k for k, seen in self._unsupported.items() if seen < oldest_kept]:
            del self._unsupported[key]
            self._unsupported_dirs.discard(key)

    def _note_unsupported(self, updater: Updater, error: NotSupported) -> None:
        if updater.key in self._unsupported:  # noted by BatchRun (a refused updater is not)
            self._unsupported_dirs.add(updater.key)
        if updater.name not in self._unsupported_logged:
            self._unsupported_logged.add(updater.name)
            log.info("cgroup_resource_unsupported", resource=updater.name, path=error.path)

    @staticmethod
    def _log_batch(result: BatchResult, problems: list[int], gone_indices: list[int]) -> None:
        outcomes = result.outcomes
        gone = sorted({result.updaters[i].cgroup_dir for i in gone_indices})
        if gone:
            log.debug("cgroup_gone_during_update", cgroups=gone[:_EXAMPLES_LOGGED],
                      count=len(gone))
        if problems:
            examples = [
                {"resource": result.updaters[i].name, "cgroup": result.updaters[i].cgroup_dir,
                 "outcome": outcomes[i].value, "error": str(result.errors.get(i))}
                for i in problems[:_EXAMPLES_LOGGED]
            ]
            log.warning("resource_update_problems", count=len(problems), examples=examples,
                        rolled_back=result.rolled_back,
                        rollback_failures=len(result.rollback_failures))

    def _record(self, updaters: Sequence[Updater], outcomes: list[Outcome], todo: list[int],
                started: float) -> None:
        metrics = self.metrics
        if metrics is None:
            return
        counts: Mapping[tuple[str, Outcome], int]
        if todo:  # Counter over zip counts in C: cheaper than a Python loop over todo
            counts = Counter(zip(map(_NAME_OF, updaters), outcomes))
        else:
            counts = {(name, Outcome.SKIPPED): n
                      for name, n in Counter(map(_NAME_OF, updaters)).items()}
        metrics.record_batch(counts, time.perf_counter() - started)


def _log_failure(done: "Future[Any]") -> None:
    error = done.exception()
    if error is not None:
        log.error("cgroup_io_failed", error=repr(error))


def executor_without_cgroups(host: Host | None = None, **kwargs: Any) -> ResourceExecutor:
    """The executor of a host with no cgroup hierarchy: every update's outcome is
    NOT_SUPPORTED and nothing is written. Callers never need an Optional executor."""
    host = host if host is not None else Host()
    return ResourceExecutor(CgroupFiles(host, no_hierarchy(host.cgroup_root)), **kwargs)
