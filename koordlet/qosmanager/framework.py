"""The strategy framework: what a strategy sees, and the module that runs them.

A strategy has a `name`, the feature `gate` that switches it on, an `interval` and an
async `run(ctx)`. Each enabled strategy runs in its own `util.periodic.Periodic` on the
daemon's event loop; a round that raises is logged once per kind and counted, and the next
round runs as usual.
`QoSManager.run_round()` runs every strategy once (tests, the benchmark).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Protocol, Sequence

import structlog

from koordlet.metriccache.api import MetricCache
from koordlet.metrics.client import CollectorRegistry
from koordlet.ports.be_suppress import BESuppressBoard
from koordlet.qosmanager.dirs import QoSDirs
from koordlet.qosmanager.eviction import EvictionPath
from koordlet.qosmanager.metrics import QoSMetrics
from koordlet.qosmanager.usage import UsageView
from koordlet.slo.node_slo import NodeSLO
from koordlet.slo.source import NodeSLOSource
from koordlet.statesinformer.api import StatesInformer
from koordlet.util.periodic import Periodic
from resourceexecutor import ResourceExecutor, Updater
from system.cgroup_readers import CgroupReader
from system.errors import Gone
from system.host import Host
from system.topology import CpuTopology

log = structlog.get_logger(__name__)

# How long QoSContext.updater remembers an updater nobody asked for: one to two of these.
# Pods come and go (bench.pod_churn: ~3 updaters a pod were kept until 32,768 had piled up);
# the strategies' rounds come every second by default.
UPDATER_MEMO_SECONDS = 60.0


@dataclass(slots=True)
class QoSContext:
    """Everything a strategy reads and writes through; built when the executor exists."""

    states: StatesInformer
    metric_cache: MetricCache
    node_slo: NodeSLOSource
    executor: ResourceExecutor
    reader: CgroupReader  # reads through system/
    evictions: EvictionPath
    metrics: QoSMetrics
    dirs: QoSDirs
    host: Host
    topology: CpuTopology | None
    clock: Callable[[], float] = time.time  # wall clock: metric cache timestamps are unix seconds
    container_sample_age: float = 5.0  # how old a container's last sample may be (UsageView)
    # where CPU suppress publishes the BE tier's state for the runtime hooks (a hub value)
    be_suppress: BESuppressBoard = field(default_factory=BESuppressBoard)
    memo_clock: Callable[[], float] = time.monotonic
    # updaters asked for since the memo last turned, and those of the turn before, by
    # (resource, cgroup dir): one value a file, the updater's own key kept as the dict's
    _updaters: dict[tuple[str, str], Updater] = field(default_factory=dict, init=False, repr=False)
    _older_updaters: dict[tuple[str, str], Updater] = field(default_factory=dict, init=False, repr=False)
    _memo_turned_at: float | None = field(default=None, init=False, repr=False)

    def updater(self, resource: str, cgroup_dir: str, value: Any) -> Updater:
        """The executor's updater for this value, built once: a round asks for the same
        thousands of values again, and building one validates and formats its text. An
        updater not asked for over a turn of UPDATER_MEMO_SECONDS is let go at the next
        (its cgroup gone, or its value changed); the memo turns on a miss and after each
        strategy's round. Kept by file, not by value: a key of (resource, dir, type, value)
        was a tuple of its own an updater (~3,000 at 1,000 pods); asking a file for another
        value replaces its updater."""
        key = (resource, cgroup_dir)
        found = self._updaters.get(key)
        if found is None or not _same_value(found.value, value):
            self.turn_memo()
            found = self._older_updaters.pop(key, None)
            if found is None or not _same_value(found.value, value):
                found = self.executor.updater(resource, cgroup_dir, value)
            self._updaters[found.key if found.key == key else key] = found
        return found

    def turn_memo(self) -> None:
        """Let go of the updaters not asked for over the last turn when the turn is over."""
        now = self.memo_clock()
        if self._memo_turned_at is None:
            self._memo_turned_at = now
        elif now - self._memo_turned_at >= UPDATER_MEMO_SECONDS:
            self._older_updaters, self._updaters = self._updaters, {}
            self._memo_turned_at = now

    async def value(self, resource: str, cgroup_dir: str) -> Any:
        """reader.value(resource, cgroup_dir), the file read in the executor's IO thread
        (executor.read_in_thread). Raises Gone when it could not be read (a vanished cgroup,
        the usual cause; the batch reader keeps no errno)."""
        path = self.reader.path(resource, cgroup_dir)
        (text,) = await self.executor.read_in_thread([path])
        if text is None:
            raise Gone("could not be read", path)
        return self.reader.parse(resource, text)

    async def exists(self, cgroup_dir: str, subsystem: str) -> bool:
        """Whether the cgroup is there (reader.files.exists), looked up in the executor's IO
        thread: a stat of a cgroup dir waits in the kernel while the runtime makes and
        removes cgroups (13 ms on the loop at N = 1,000, bench.daemon_holds)."""
        return await self.executor.in_io_thread(self.reader.files.exists, cgroup_dir, subsystem)

    def usage(self) -> UsageView:
        return UsageView(self.metric_cache, self.clock(), container_max_age=self.container_sample_age)

    def slo(self) -> NodeSLO:
        return self.node_slo.current()


def _same_value(kept: Any, asked: Any) -> bool:
    """1, 1.0 and True are equal but written differently: kept apart."""
    return type(kept) is type(asked) and kept == asked


class Strategy(Protocol):
    name: str
    gate: str
    interval: float

    async def run(self, ctx: QoSContext) -> None: ...


ContextFactory = Callable[[], QoSContext]


class QoSManager:
    """A daemon module running each strategy on its own interval (util.periodic's rules);
    ready while every strategy's loop is alive."""

    name = "qosmanager"

    def __init__(self, strategies: Sequence[Strategy], context: ContextFactory,
                 registry: CollectorRegistry | None = None) -> None:
        self.strategies = tuple(strategies)
        self._context_factory = context
        self._registry = registry
        self.context: QoSContext | None = None
        self._loops: list[Periodic] = []

    async def start(self) -> None:
        ctx = self.context = self._context_factory()
        self._loops = [Periodic(f"qos-{s.name}", partial(self._run_one, s, ctx), s.interval,
                                event="qos_strategy_failed", registry=self._registry) for s in self.strategies]
        for loop in self._loops:
            loop.start()
        log.info("qos_manager_started", strategies=[s.name for s in self.strategies])

    async def run_round(self) -> None:
        """Every strategy once, in order (tests, the benchmark)."""
        if self.context is None:
            self.context = self._context_factory()
        for strategy in self.strategies:
            try:
                await self._run_one(strategy, self.context)
            except Exception as exc:
                log.error("qos_strategy_failed", strategy=strategy.name, error=repr(exc))

    @staticmethod
    async def _run_one(strategy: Strategy, ctx: QoSContext) -> None:
        try:
            await strategy.run(ctx)
        except Exception:
            ctx.metrics.round(strategy.name, "failed")
            raise  # the runner logs it once per kind and carries on
        finally:
            ctx.turn_memo()  # also on a quiet node, where no round asks for a new updater
        ctx.metrics.round(strategy.name, "ok")

    async def stop(self) -> None:
        for loop in self._loops:
            await loop.stop()
        self._loops.clear()
        if self.context is not None:
            self.context.reader.close()
            close = getattr(self.context.evictions.evictor, "close", None)
            if close is not None:  # the Eviction API client
                await close()

    def ready(self) -> bool:
        return bool(self._loops) and all(loop.alive() for loop in self._loops)
