"""The metrics advisor as a daemon module: builds the collectors' context at start, runs the
scheduler, forgets the series of deleted pods and containers, and exposes /metrics figures.
"""

from __future__ import annotations

import structlog

from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.framework import CollectContext, Collector, CollectorUnsupported, Scheduler
from koordlet.statesinformer.api import StatesInformer, Unsubscribe
from koordlet.statesinformer.model import PodEvent, PodEventKind
from koordlet.util.host_facts import HostFacts
from system.cgroup_readers import CgroupReader
from system.file_io import KeptFdPool
from system.usage_reader import UsageReader

log = structlog.get_logger(__name__)


class MetricsAdvisorModule:
    name = "metricsadvisor"

    def __init__(self, facts: HostFacts, store: MetricStore, states: StatesInformer | None, node_name: str,
                 collectors: list[Collector], fd_pool: KeptFdPool | None = None) -> None:
        self._facts = facts
        # the daemon's one pool of kept fds (Hubs.fd_pool): the executor's, in its IO thread;
        # the perf fds budget what it leaves. Without one (tests, tools) the module makes its own
        self._own_pool = fd_pool is None
        self._fd_pool = fd_pool if fd_pool is not None else KeptFdPool()
        self._store = store
        self._states = states
        self._node_name = node_name
        self._collectors = collectors
        self.scheduler = Scheduler(store)
        self._reader: CgroupReader | None = None
        self._usage: UsageReader | None = None
        self._unsubscribe: Unsubscribe | None = None
        self.unsupported: dict[str, str] = {}

    async def start(self) -> None:
        facts = self._facts
        ctx = CollectContext(facts.host, self._store, self._node_name, states=self._states, fd_pool=self._fd_pool,
                             facts=facts)
        if facts.has_cgroups:
            ctx.files = facts.files
            # PSI and the rest read every 10 s or less often: open per read, no fds held
            ctx.reader = self._reader = CgroupReader(ctx.files, keep_open=False)
            # its paths only: the collectors read them in batches in the reading thread, so it
            # keeps no fd (the pool's are touched by the executor's IO thread alone)
            ctx.usage = self._usage = UsageReader(ctx.files, keep_open=False)
        else:
            log.warning("cgroup_metrics_disabled", reason=facts.cgroup_error)
        for collector in self._collectors:
            try:
                collector.setup(ctx)
            except CollectorUnsupported as exc:
                self.unsupported[collector.name] = str(exc)
                log.warning("collector_unsupported", collector=collector.name, reason=str(exc))
                continue
            self.scheduler.add(collector)
        if self._states is not None:
            self._unsubscribe = self._states.subscribe(self._on_pod_event)
        self.scheduler.start()
        log.info("metrics_advisor_started", collectors=[c.name for c in self.scheduler.collectors],
                 unsupported=sorted(self.unsupported))

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        await self.scheduler.stop()
        for reader in (self._reader, self._usage):
            if reader is not None:
                reader.close()
        self._reader = self._usage = None
        if self._own_pool:
            self._fd_pool.close()

    def ready(self) -> bool:
        """Ready once every collector had its first turn: a collector that keeps failing is
        counted on /metrics (koordlet_collector_errors_total), not a reason to stay unready."""
        return self.scheduler.running() and self.scheduler.all_tried()

    def _on_pod_event(self, event: PodEvent) -> None:
        """Series and the usage reader's paths of deleted pods and stopped containers go now, not at expiry."""
        if event.kind is PodEventKind.DELETED:
            self._store.forget_pod(event.pod.uid)
            self._forget_cgroup(event.pod.cgroup_parent)
            return
        if event.kind is PodEventKind.UPDATED and event.previous is not None:
            running = {c.id for c in event.pod.running_containers}
            for container in event.previous.containers:
                if container.id not in running:
                    self._store.forget_container(event.pod.uid, container.id)
                    self._forget_cgroup(container.cgroup_dir)

    def _forget_cgroup(self, cgroup_dir: str) -> None:
        if self._usage is not None and cgroup_dir:
            self._usage.forget(cgroup_dir)

