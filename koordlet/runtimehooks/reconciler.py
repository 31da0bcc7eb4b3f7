"""The bypass transport: apply every pod's plan through the resource executor.

One pass writes the kube-QoS directories, then every pod cgroup, then every
container cgroup as one levelled batch (parent before child when a limit grows,
child first when it shrinks: the executor's levelled order). Passes run every
`interval` and at once when the engine reports a change or after an NRI
(re)synchronize.

Drift: the executor's write cache skips a value it wrote or read less than
`force_update_after` (60 s by default) ago without looking, and looks again once
the entry is older: koordlet's contract, a value changed behind our back is
repaired within that window. The periodic pass keeps that contract at a fraction
of its cost by reading back a rotating share of the pods' files: a pod's turn
comes once every `force_update_after // interval` periodic passes (its place in
the rotation from the hash of its uid, so pods coming and going do not move the
others), and the kube-QoS files, few, are read on every pass. The files of the
turn's pods are read with the QoS tiers' in the pass's first step, through a batch
kept per share while its pods keep their plans (`TurnReadBack`); an entry whose file
no longer holds the cached value is dropped, so the levelled batches that follow read
and rewrite exactly those, and the others are dated now, so the executor does not
read them again before the pod's next turn. A full pass that was asked for (start-up, an NRI
(re)synchronize: `trigger(full=True)`) reads back every file. Measured
(bench/runtime_hooks.py): the whole read-back plus a cached batch costs a fraction of
`update_levels(use_cache=False)`, which runs the executor's whole read-compare
machinery on every file, and the periodic pass does 1/turns of those reads (a sixth
at the defaults, 60 s and 10 s). Passes triggered by a change cover only the changed
pods and trust the cache.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from functools import partial
from typing import Callable, Generator, Mapping, Sequence

import structlog

from koordlet.metrics.client import CollectorRegistry, Counter
from koordlet.metrics.histogram import Histogram
from koordlet.runtimehooks.engine import HookEngine
from koordlet.runtimehooks.hooks.group_identity import qos_dir_specs
from koordlet.runtimehooks.read_back import TurnReadBack, file_places, invalidate_drifted
from koordlet.runtimehooks.spec import PodPlan, ResourceSpec
from koordlet.statesinformer.model import PodInfo
from koordlet.util.periodic import Periodic
from resourceexecutor import Outcome, ResourceExecutor, Updater
from system.cgroup_layout import QoSTier
from system.cgroup_resource import REGISTRY

log = structlog.get_logger(__name__)

# Pods per step of a pass at most. A step's file work runs in the executor's IO thread; on
# the loop a step only takes plans and updaters (kept while a pod's plan holds). Per-step costs
# (the drift read-back's C call and anchors, the batch's set-up, the thread hop) made 5-pod
# steps 21-23 ms of CPU a periodic pass at 1,000 pods, 25-pod steps 15 (bench.runtime_hooks).
PODS_PER_PASS_STEP = 25
# A step is cut short once its pods held the loop this long: building a pod's updaters anew
# (first pass, a rule change) costs ~0.2 ms, 25 pods held the loop 6.7 ms.
STEP_SECONDS = 0.002

# Spec field -> cgroup resource (registry name); order is the write order within a cgroup.
FIELD_RESOURCES: tuple[tuple[str, str], ...] = (
    ("cpuset_mems", "cpuset.mems"),
    ("cpuset_cpus", "cpuset.cpus"),
    ("cpu_shares", "cpu.shares"),
    ("cfs_period", "cpu.cfs_period_us"),
    ("cfs_quota", "cpu.cfs_quota_us"),
    ("memory_limit", "memory.limit_in_bytes"),
    ("bvt", "cpu.bvt_warp_ns"),
    ("cpu_idle", "cpu.idle"),
)


def _unified_value(text: str) -> int | None:
    if text.strip() == "max":
        return -1
    try:
        return int(text)
    except ValueError:
        return None


def updaters_for(executor: ResourceExecutor, spec: ResourceSpec, cgroup_dir: str) -> list[Updater]:
    """Updaters for every field the spec owns. `unified` entries whose v2 file is a
    registry resource of its own name (memory.high, cpu.idle, ...) are written too."""
    out = [executor.updater(resource, cgroup_dir, getattr(spec, name))
           for name, resource in FIELD_RESOURCES if getattr(spec, name) is not None]
    for key, text in spec.unified.items():
        resource = REGISTRY.get(key)
        value = _unified_value(text)
        if resource is not None and resource.v2_file == key and resource.writable and value is not None:
            out.append(executor.updater(resource, cgroup_dir, value))
    return out


@dataclass(frozen=True, slots=True)
class ChunkDone:
    """What one chunk's file work did (`chunk_io`)."""
    updates: int    # updaters in its batch
    writes: int     # of those, written
    problems: int   # of those, invalid or failed
    checked: int    # files read back for drift
    drifted: int    # of those, how many no longer held the cached value
    seconds: float  # its time in the IO thread


# A pass's steps: each yields its chunk's file work, to be run in the executor's IO thread,
# and is sent what it did; returns the pass's result.
PassSteps = Generator[Callable[[], ChunkDone], ChunkDone, "PassResult"]


def chunk_io(executor: ResourceExecutor, levels: Sequence[Sequence[Updater]], to_check: Sequence[Updater],
             turn: TurnReadBack | None = None) -> ChunkDone:
    """One chunk's file work: the files of `to_check` (and of a periodic pass's `turn`)
    read back (the entries that drifted forgotten, the others dated now), then the levels
    written through the cache, which reads and rewrites exactly the forgotten ones."""
    started = time.perf_counter()
    checked = drifted = 0
    if to_check:
        paths, path_of = file_places(to_check)
        texts = executor.io.read_many(paths)
        checked, drifted = invalidate_drifted(executor, to_check, [texts[at] for at in path_of])
    if turn is not None:
        turn_checked, turn_drifted = turn.check(executor)
        checked += turn_checked
        drifted += turn_drifted
    result = executor.update_levels(levels)
    writes = problems = 0
    if result.writes or result.errors:  # else every outcome is SKIPPED: nothing to count
        outcomes = result.outcomes
        writes = outcomes.count(Outcome.WRITTEN)
        problems = outcomes.count(Outcome.INVALID) + outcomes.count(Outcome.FAILED)
    return ChunkDone(len(result.outcomes), writes, problems, checked, drifted, time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class SettledPods:
    """A periodic pass's settled pods (`Reconciler._settle`) when it settled every pod: the
    informer's listing it took them from, the reconciler's changes to its kept updaters then,
    and their updaters (pod level, container level). A later periodic pass that finds the
    same listing (the informer gives the same tuple while no pod changed), no pod the
    engine changed, and no change to the kept updaters, settles the same."""
    listing: tuple[PodInfo, ...]
    built_changes: int
    levels: tuple[list[Updater], list[Updater]]

    def holds(self, listing: tuple[PodInfo, ...], built_changes: int) -> bool:
        return listing is self.listing and built_changes == self.built_changes


@dataclass(frozen=True, slots=True)
class PassResult:
    full: bool
    pods: int
    updates: int
    writes: int
    problems: int
    seconds: float
    checked: int = 0   # files read back for drift
    drifted: int = 0   # of those, how many no longer held the cached value
    rotating: bool = False  # a periodic full pass: only this turn's share of the pods read back


class ReconcileMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.duration = Histogram("koordlet_runtime_hooks_reconcile_duration_seconds",
                                  "one reconcile pass over every pod, by mode", ("mode",), registry=registry,
                                  buckets=(1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1.0)) \
            if registry is not None else None
        self.writes = Counter("koordlet_runtime_hooks_reconcile_writes",
                              "cgroup files the reconcile loop wrote (drift or changes repaired)",
                              registry=registry) if registry is not None else None

    def record(self, result: PassResult) -> None:
        if self.duration is not None and self.writes is not None:
            mode = "periodic" if result.rotating else "full" if result.full else "changed"
            self.duration.labels(mode).observe(result.seconds)
            self.writes.inc(result.writes)


class Reconciler:
    def __init__(self, engine: HookEngine, executor: ResourceExecutor, interval: float, *,
                 qos_dirs: Mapping[QoSTier, str] | Callable[[], Mapping[QoSTier, str]] | None = None,
                 registry: CollectorRegistry | None = None, containers_on_change: bool = True,
                 step_clock: Callable[[], float] = time.perf_counter) -> None:
        self.engine = engine
        # what a step's time is read from (the thread's CPU clock is a system call, ~0.8 us a pod)
        self._step_clock = step_clock
        self._executor = executor
        self.interval = interval
        # the kube QoS dirs: a fixed map, or asked on every pass (the host facts' answer,
        # empty until kubelet has made kubepods)
        self._qos_dirs = qos_dirs if callable(qos_dirs) else (lambda fixed=dict(qos_dirs or {}): fixed)
        # False in NRI mode: NRI updates running containers on a change; the periodic
        # full pass still covers every container (drift, creations while disconnected).
        self.containers_on_change = containers_on_change
        self.metrics = ReconcileMetrics(registry)
        self._built: dict[str, tuple[PodPlan, list[Updater], list[Updater]]] = {}
        self._built_changes = 0  # changes to _built so far: what is derived from it is kept until the next
        self._settled: SettledPods | None = None  # a periodic pass's settled pods, kept while nothing changed
        self._full_requested = True
        self._dirty: set[str] | None = set()  # pods changed since the last pass; None: all
        self._next_full = 0.0
        self._turn = 0  # periodic full passes so far: whose share of the pods is read back next
        self._turn_reads: dict[int, tuple[int, TurnReadBack]] = {}  # per share, its kept read-back and the
        # _built_changes it was last found to hold at
        self._turn_reads_for = 0  # the number of turns they were made for
        self._loop = Periodic("runtime-hooks-reconcile", self._pass, interval, event="runtime_hooks_reconcile_failed",
                              registry=registry)
        self.passes = 0
        self.last: PassResult | None = None
        engine.add_listener(self._plans_changed)

    def trigger(self, full: bool = False) -> None:
        """Run a pass soon (full: read-compare every file, as after a resync)."""
        self._full_requested = self._full_requested or full
        self._loop.wake()

    def _plans_changed(self, changed: frozenset[str] | None) -> None:
        if changed is None or self._dirty is None:
            self._dirty = None
        else:
            self._dirty |= changed
        self._loop.wake()

    # -- one pass ---------------------------------------------------------------------

    @property
    def qos_dirs(self) -> Mapping[QoSTier, str]:
        return self._qos_dirs()

    @property
    def turns(self) -> int:
        """Periodic passes per rotation: every pod's files are read back once per the
        executor's force-update window (and at least once per pass)."""
        return max(1, int(self._executor.cache.policy.force_update_after // self.interval))

    def reconcile_once(self, full: bool, *, rotating: bool = False) -> PassResult:
        """One pass. Full: every pod written through the cache after every file is read
        and compared; rotating (with full): the periodic kind, only the kube-QoS files and
        this turn's share of the pods' files read back. Otherwise only the pods changed
        since the last pass, trusting the executor's cache."""
        steps = self.reconcile_steps(full, rotating=rotating)
        try:
            work = next(steps)
            while True:
                work = steps.send(work())
        except StopIteration as finished:
            return finished.value

    async def _reconcile_off_loop(self, full: bool, rotating: bool) -> PassResult:
        """`reconcile_once` with each chunk's file work in the executor's IO thread: an
        open() or write() of a cgroup file waits in the kernel while the runtime makes and
        removes cgroups (reads up to 18 ms and writes up to 15 ms at N = 1,000 on the loop)."""
        steps = self.reconcile_steps(full, rotating=rotating)
        try:
            work = next(steps)
            while True:
                work = steps.send(await self._executor.in_io_thread(work))
        except StopIteration as finished:
            return finished.value

    def reconcile_steps(self, full: bool, *, rotating: bool = False) -> PassSteps:
        """`reconcile_once` in steps of at most PODS_PER_PASS_STEP pods (a full pass over
        1,000 pods held the loop ~100 ms: deciding the plans, building the updaters, the
        drift reads and the writes): the QoS tiers first, then each step's pods with their containers,
        so a parent is written before its children. A pod's plan is taken when its step
        runs, from the informer's pod at that moment; a periodic pass puts the pods the
        engine has not changed since the last pass in the QoS tiers' step with their kept
        updaters (`_settle`; while no pod changed since a pass that settled them all, that
        pass's very lists: `SettledPods`). Each step yields its file work (`chunk_io`) and is
        sent what it did."""
        executor = self._executor
        busy = 0.0
        started = time.perf_counter()
        dirty, self._dirty = self._dirty, set()
        rotating = full and rotating
        pods: list[PodInfo] = []
        settled: tuple[list[Updater], list[Updater]] = ([], [])
        listing = self.engine.states.pods() if full or dirty is None else ()
        kept = self._settled
        if rotating and dirty is not None and not dirty and kept is not None and kept.holds(listing, self._built_changes):
            settled = kept.levels  # no pod changed since a pass that settled them all: the same updaters
        elif full or dirty is None:
            pods.extend(listing)
            present = {pod.uid for pod in pods}
            built = {uid: entry for uid, entry in self._built.items() if uid in present}
            if len(built) < len(self._built):
                self._built = built
                self._built_changes += 1
        else:
            for uid in dirty:
                pod = self.engine.states.pod(uid)
                if pod is None:
                    if self._built.pop(uid, None) is not None:  # deleted: nothing to write, forget its updaters
                        self._built_changes += 1
                else:
                    pods.append(pod)
        pod_count = len(listing) if full or dirty is None else len(pods)
        with_containers = full or self.containers_on_change
        turns, share = self.turns, self._turn % self.turns
        if rotating:
            self._turn += 1
        checked = drifted = updates = writes = problems = 0
        qos_level = self._qos_updaters(executor)
        # a periodic pass reads back its turn's share of the pods with the QoS tiers, in one
        # kept batch of the files their updaters of the last pass name (a pod new or changed
        # since is read again by the executor once its entries age past the force-update window)
        turn = self._turn_read_back(turns, share) if rotating else None
        if rotating and dirty is not None and pods:
            pods, settled = self._settle(pods, dirty)
            if not pods and not dirty:
                self._settled = SettledPods(listing, self._built_changes, settled)
        taken = -1  # pods of the pass taken into steps so far; -1: the QoS tiers' step first
        while taken < len(pods):
            if taken < 0:  # the QoS tiers, read back on every full pass (and a periodic pass's settled pods)
                levels = [qos_level, *settled]
                to_check = qos_level if full else []
                taken = 0
            else:
                turn = None
                per_pod, taken = self._step_pods(executor, pods, taken)
                levels = [[], [u for pod_level, _ in per_pod for u in pod_level],
                          [u for _, container_level in per_pod for u in container_level] if with_containers else []]
                to_check = levels[1] + levels[2] if full and not rotating else []
            busy += time.perf_counter() - started
            done = yield partial(chunk_io, executor, levels, to_check, turn)
            started = time.perf_counter()
            busy += done.seconds
            updates += done.updates
            writes += done.writes
            problems += done.problems
            checked += done.checked
            drifted += done.drifted
        busy += time.perf_counter() - started
        outcome = PassResult(full, pod_count, updates, writes, problems, busy, checked, drifted, rotating)
        self.metrics.record(outcome)
        self.passes += 1
        self.last = outcome
        if writes or problems:
            log.info("runtime_hooks_reconciled", full=full, rotating=rotating, pods=outcome.pods, writes=writes,
                     problems=problems, drifted=drifted)
        return outcome

    def _settle(self, pods: list[PodInfo],
                dirty: set[str]) -> tuple[list[PodInfo], tuple[list[Updater], list[Updater]]]:
        """A periodic pass's pods whose plans the engine has not changed since the last pass
        (it names every change: `dirty`) keep their updaters, for the pass's first batch,
        without asking the informer and the engine again. Returns the other pods (new,
        changed), taken in steps, and the kept updaters (pod level, container level)."""
        built = self._built
        pod_level: list[Updater] = []
        container_level: list[Updater] = []
        others: list[PodInfo] = []
        for pod in pods:
            kept = built.get(pod.uid)
            if kept is None or pod.uid in dirty:
                others.append(pod)
            else:
                pod_level.extend(kept[1])
                container_level.extend(kept[2])
        return others, (pod_level, container_level)

    def _turn_read_back(self, turns: int, share: int) -> TurnReadBack:
        """The kept read-back of this share of the pods: the one made before while the
        share's pods keep their plans, else a new one."""
        if turns != self._turn_reads_for:
            self._turn_reads, self._turn_reads_for = {}, turns
        kept = self._turn_reads.get(share)
        if kept is not None and kept[0] == self._built_changes:
            return kept[1]
        mine = [built for uid, built in self._built.items() if hash(uid) % turns == share]
        plans = tuple(plan for plan, _, _ in mine)
        read_back = kept[1] if kept is not None and kept[1].holds(plans) else \
            TurnReadBack(plans, [u for _, pod_u, ctr_u in mine for u in pod_u + ctr_u])
        self._turn_reads[share] = (self._built_changes, read_back)
        return read_back

    def _step_pods(self, executor: ResourceExecutor, pods: Sequence[PodInfo],
                   start: int) -> tuple[list[tuple[list[Updater], list[Updater]]], int]:
        """The updaters of the next step's pods from `start`, as the informer holds them now
        (one may have changed or gone since the pass began): PODS_PER_PASS_STEP pods, or fewer
        once they held the loop STEP_SECONDS; and where the next step starts."""
        clock = self._step_clock
        began = clock()
        per_pod: list[tuple[list[Updater], list[Updater]]] = []
        end = min(start + PODS_PER_PASS_STEP, len(pods))
        at = start
        while at < end:
            pod = self.engine.states.pod(pods[at].uid)
            at += 1
            if pod is not None:
                per_pod.append(self._updaters(executor, self.engine.plan(pod)))
                if clock() - began >= STEP_SECONDS:
                    break
        return per_pod, at

    def _updaters(self, executor: ResourceExecutor, plan: PodPlan) -> tuple[list[Updater], list[Updater]]:
        """The pod's and its containers' updaters, built again only when its plan changed."""
        built = self._built.get(plan.uid)
        if built is None or built[0] is not plan:
            built = self._built[plan.uid] = (plan, self._pod_updaters(executor, plan),
                                             self._container_updaters(executor, plan))
            self._built_changes += 1
        return built[1], built[2]

    def _qos_updaters(self, executor: ResourceExecutor) -> list[Updater]:
        qos_dirs = self.qos_dirs
        if not qos_dirs or not any(h.name == "GroupIdentity" for h in self.engine.hooks):
            return []
        return [u for tier, spec in qos_dir_specs(self.engine.config).items() if tier in qos_dirs
                for u in updaters_for(executor, spec, qos_dirs[tier])]

    @staticmethod
    def _pod_updaters(executor: ResourceExecutor, plan: PodPlan) -> list[Updater]:
        return updaters_for(executor, plan.spec, plan.cgroup_dir) if plan.cgroup_dir else []

    @staticmethod
    def _container_updaters(executor: ResourceExecutor, plan: PodPlan) -> list[Updater]:
        return [u for c in plan.containers if c.cgroup_dir for u in updaters_for(executor, c.spec, c.cgroup_dir)]

    # -- the loop ---------------------------------------------------------------------

    def start(self) -> None:
        self._next_full = asyncio.get_running_loop().time()
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    def alive(self) -> bool:
        return self._loop.alive()

    async def _pass(self) -> float:
        """One pass when woken (changed pods) or when the full pass is due; the time to the
        next full pass (a change wakes the loop sooner)."""
        await asyncio.sleep(0)  # let a burst of pod events land in one pass
        now = asyncio.get_running_loop().time()
        asked = self._full_requested
        full = asked or now >= self._next_full
        self._full_requested = False
        if full:
            self._next_full = now + self.interval
        await self._reconcile_off_loop(full, rotating=not asked)
        return max(self._next_full - asyncio.get_running_loop().time(), 0.0)
