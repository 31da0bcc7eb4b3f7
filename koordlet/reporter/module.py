"""The reporter as a daemon module: two loops on the event loop, each a thin shell around
the pure builders.

- every reportIntervalSeconds: NodeMetric status and batch resources, sent to the API
  server (when not standalone), written to the output file (when set), served on
  /apis/v1/*; the cluster object's metricCollectPolicy, once seen, drives the windows;
- every --realtime-overcommit-sync-period: the overcommit ratios, patched onto the KCNR
  when they changed;
- every 3 s (koordlet's node topology sync): the NodeResourceTopology, written when it
  changed (nrt_sink.py), served on /apis/v1/noderesourcetopology.

A failed report is logged, counted and retried after a short backoff (5 s doubling, at
most the interval); nothing here waits on collection or holds the loop for IO: API calls
are awaited in these tasks, files and kubelet state are read in worker threads.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Callable

import structlog

from koordlet.agent import StartupError
from koordlet.metriccache.api import MetricCache
from koordlet.metrics.client import CollectorRegistry
from koordlet.reporter.batch import ReclaimThresholds, batch_resources_steps
from koordlet.reporter.katalyst_metrics import uncollected
from koordlet.reporter.kube_sink import KubeSink, Outcome
from koordlet.reporter.nodemetric import (
    NodeMetricSnapshot,
    PodRows,
    node_metric_object,
    node_metric_text,
    snapshot_steps,
    status_text_steps,
)
from koordlet.reporter.nrt_sink import NrtOutcome, NrtWriter
from koordlet.reporter.nrt_source import NrtSource
from koordlet.reporter.overcommit import LoadTargets, OvercommitResult, advise
from koordlet.reporter.overcommit_load import UsageKeys, node_load_steps
from koordlet.reporter.policy import MetricCollectPolicy, PolicyError, policy_from_spec
from koordlet.reporter.report_metrics import ReportMetrics
from koordlet.reporter.resource_managers import ResourceManagers, StateFileError
from koordlet.reporter.standalone import LatestReports, write_report_file
from koordlet.statesinformer.api import StatesInformer
from koordlet.util.kube_client import KubeClientError
from koordlet.util.periodic import Periodic
from koordlet.util.steps import Steps, run_steps_on_loop
from system.errors import SystemFileError

log = structlog.get_logger(__name__)

FIRST_RETRY_SECONDS = 5.0
KUBE_CALL_BUDGET_SECONDS = 30.0  # one report round, all its API calls included
STANDALONE_REFRESH_SECONDS = 1.0
NRT_SYNC_SECONDS = 3.0


# a report's snapshot and its status' canonical text
Built = tuple[NodeMetricSnapshot, str]


class Round(Enum):
    SENT = "sent"
    NOT_READY = "not_ready"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class ReportSettings:
    policy: MetricCollectPolicy
    node_metric: bool
    overcommit: bool
    sync_period_seconds: float
    cpu_targets: LoadTargets
    memory_targets: LoadTargets
    cpu_metrics: tuple[str, ...]
    memory_metrics: tuple[str, ...]
    thresholds: ReclaimThresholds
    output_file: Path | None
    topology: bool = False


@dataclass(frozen=True, slots=True)
class Allocatable:
    milli_cpu: int
    memory_bytes: int


class ReportsModule:
    name = "reports"

    def __init__(self, settings: ReportSettings, states: StatesInformer, cache: MetricCache,
                 managers: ResourceManagers, metrics: ReportMetrics, latest: LatestReports,
                 host_allocatable: Callable[[], Allocatable],
                 kube_sink_factory: Callable[[], tuple[KubeSink, Callable[[], Any]]] | None = None,
                 clock: Callable[[], float] = time.time, registry: CollectorRegistry | None = None,
                 nrt: NrtSource | None = None) -> None:
        self._settings = settings
        self._states = states
        self._cache = cache
        self._managers = managers
        self._metrics = metrics
        self._latest = latest
        self._host_allocatable = host_allocatable
        self._kube_sink_factory = kube_sink_factory
        self._clock = clock
        self._policy = settings.policy
        self._usage_keys = UsageKeys(settings.cpu_metrics, settings.memory_metrics, cache.shared_key)
        self._pod_rows = PodRows(cache.shared_key)  # each pod's series keys, priority and requests while it is unchanged
        self._kube: KubeSink | None = None
        self._close_kube: Callable[[], Any] | None = None
        self._host: Allocatable | None = None
        self._loops: list[Periodic] = []
        self._retry = FIRST_RETRY_SECONDS
        self._registry = registry
        self._sent_annotations: dict[str, str] | None = None
        self._built_at = float("-inf")
        self._building: asyncio.Future[Built | None] | None = None  # the stepped build running now
        self._nrt = nrt
        self._nrt_writer: NrtWriter | None = None
        if settings.node_metric:
            latest.refresh_node_metric = self._standalone_node_metric

    # ------------------------------------------------------------------ module
    async def start(self) -> None:
        await self.prepare()
        if self._settings.node_metric:
            self._loops.append(Periodic("reports-nodemetric", self._report_round,
                                        lambda: self._policy.effective().report_interval_seconds,
                                        event="nodemetric_round_failed", registry=self._registry))
        if self._settings.overcommit:
            self._loops.append(Periodic("reports-overcommit", self._overcommit_round,
                                        self._settings.sync_period_seconds, event="overcommit_round_failed",
                                        registry=self._registry))
        if self._settings.topology and self._nrt is not None:
            self._loops.append(Periodic("reports-topology", self._topology_round, NRT_SYNC_SECONDS,
                                        event="nrt_round_failed", registry=self._registry))
        for loop in self._loops:
            loop.start()
        log.info("reports_started", node_metric=self._settings.node_metric, overcommit=self._settings.overcommit,
                 kubernetes=self._kube is not None, output_file=str(self._settings.output_file or ""))

    async def prepare(self) -> None:
        """Everything start() does but the loops (tests drive the rounds themselves)."""
        try:
            self._host = await asyncio.to_thread(self._host_allocatable)
        except SystemFileError as exc:  # the Node's allocatable may still come from the informer
            log.error("host_allocatable_unreadable", error=str(exc))
            self._host = Allocatable(0, 0)
        if self._kube_sink_factory is not None:
            try:
                self._kube, self._close_kube = self._kube_sink_factory()
            except KubeClientError as exc:
                raise StartupError(str(exc), exit_code=2) from exc
            if self._settings.topology:
                self._nrt_writer = NrtWriter(self._kube.client, self._latest.node_name)
        ignored = uncollected(self._settings.cpu_metrics + self._settings.memory_metrics)
        if self._settings.overcommit and ignored:
            log.warning("overcommit_metrics_not_collected", metrics=list(ignored))

    async def stop(self) -> None:
        for loop in self._loops:
            await loop.stop()
        self._loops.clear()
        if self._building is not None:
            self._building.cancel()
        if self._close_kube is not None:
            await self._close_kube()
            self._close_kube = None

    def ready(self) -> bool:
        return bool(self._loops) and all(loop.alive() for loop in self._loops)

    # ------------------------------------------------------------------ NodeMetric and batch
    async def _report_round(self) -> float | None:
        """One report; the delay before the next: the interval once sent, soon while there
        is nothing to report yet, a doubling retry (up to the interval) after a failure."""
        interval = self._policy.effective().report_interval_seconds
        try:
            result = await self.report_once()
        except Exception:  # the runner logs it; the metric says a round failed
            self._metrics.count("nodemetric", "any", "failed")
            self._retry = min(self._retry * 2, interval)
            raise
        if result is Round.SENT:
            self._retry = FIRST_RETRY_SECONDS
            return None
        if result is Round.NOT_READY:  # right after start: the first samples are seconds away
            return FIRST_RETRY_SECONDS
        delay = min(self._retry, interval)
        self._retry = min(self._retry * 2, interval)
        return delay

    async def report_once(self) -> "Round":
        """One round: SENT when every configured sink took it (or none is configured),
        NOT_READY before any node usage exists, FAILED when a sink failed (retried sooner)."""
        built = await self._build_shared()
        if built is None:
            self._metrics.count("nodemetric", "any", "not_ready")
            log.info("nodemetric_not_ready", reason="no node usage in the aggregate window yet")
            return Round.NOT_READY
        _, status_text = built
        ok = True
        if self._settings.output_file is not None:
            ok &= await self._write_file()
        if self._kube is not None:
            ok &= await self._send_status(status_text)
        return Round.SENT if ok else Round.FAILED

    def _remember(self, snapshot: NodeMetricSnapshot, text: bytes) -> Steps[None]:
        """Keep the report's text for the routes and the file, and what follows from it: the
        batch resources (summed in steps) and the gauges."""
        self._latest.node_metric = text
        self._built_at = snapshot.update_time
        allocatable = self._allocatable()
        batch = yield from batch_resources_steps(allocatable.milli_cpu, allocatable.memory_bytes, snapshot.node,
                                                 self._states.pods(), {p.uid: p.usage for p in snapshot.pods},
                                                 self._settings.thresholds)
        self._latest.batch = batch
        self._metrics.show_batch(batch)
        self._metrics.show_usage(snapshot.node, snapshot.system)
        self._metrics.show_aggregated(snapshot.aggregated)

    async def _standalone_node_metric(self) -> bytes | None:
        """The NodeMetric's text the route answers: rebuilt when the last is a second old."""
        if self._clock() - self._built_at >= STANDALONE_REFRESH_SECONDS:
            await self._build_shared()
        return self._latest.node_metric

    async def _build_shared(self) -> Built | None:
        """Build the report in steps that yield to the loop (snapshot_steps, status_text_steps)
        and remember it; a caller that comes while a build runs (a report round, a GET of
        the route, many GETs at once) waits for that one instead of starting another."""
        building = self._building
        if building is None:
            building = self._building = asyncio.ensure_future(self._build_stepped())
            building.add_done_callback(self._build_done)
        return await asyncio.shield(building)

    async def _build_stepped(self) -> Built | None:
        snapshot = await run_steps_on_loop(
            snapshot_steps(self._cache, self._states.pods(), self._policy, self._clock(), self._pod_rows))
        if snapshot is None:
            return None
        # the status as text, written from the snapshot: the API server is sent it, the route
        # and the file keep the whole object's
        status_text = await run_steps_on_loop(status_text_steps(snapshot))
        text = node_metric_text(self._latest.node_name, self._policy, status_text)
        await run_steps_on_loop(self._remember(snapshot, text.encode()))
        return snapshot, status_text

    def _build_done(self, building: asyncio.Future[Built | None]) -> None:
        self._building = None
        if not building.cancelled():
            building.exception()  # its callers got it; a build nobody waits for any more is not an error

    async def _write_file(self) -> bool:
        path = self._settings.output_file
        assert path is not None
        try:
            await asyncio.to_thread(write_report_file, path, self._latest.file_text())
        except OSError as exc:
            self._metrics.count("nodemetric", "file", "failed")
            log.error("report_file_failed", path=str(path), error=str(exc))
            return False
        self._metrics.count("nodemetric", "file", "written")
        return True

    async def _send_status(self, status_text: str) -> bool:
        assert self._kube is not None
        new_object = node_metric_object(self._latest.node_name, self._settings.policy, None)
        try:
            outcome = await asyncio.wait_for(self._kube.write_status(status_text, new_object), KUBE_CALL_BUDGET_SECONDS)
        except Exception as exc:  # the API server, the network, a timeout: all the same here
            self._metrics.count("nodemetric", "kubernetes", "failed")
            log.error("nodemetric_report_failed", node=self._latest.node_name, error=str(exc) or repr(exc))
            return False
        self._metrics.count("nodemetric", "kubernetes", outcome.value)
        self._follow_cluster_spec(self._kube.last_spec)
        return outcome is Outcome.WRITTEN or outcome is Outcome.RATE_LIMITED

    def _follow_cluster_spec(self, spec: Any) -> None:
        try:
            policy = policy_from_spec(spec, self._settings.policy)
        except PolicyError as exc:
            log.error("nodemetric_spec_invalid", error=str(exc))
            return
        if policy != self._policy:
            log.info("nodemetric_policy_changed", policy=policy.to_spec())
            self._policy = policy

    # ------------------------------------------------------------------ overcommit
    async def _overcommit_round(self) -> None:
        try:
            await self.overcommit_once()
        except Exception:  # the runner logs it and advises again next round
            self._metrics.count("overcommit", "any", "failed")
            raise

    async def overcommit_once(self) -> OvercommitResult:
        now = self._clock()
        pods = self._states.pods()
        allocatable = self._allocatable()
        load = await run_steps_on_loop(node_load_steps(
            self._cache, pods, allocatable.milli_cpu, allocatable.memory_bytes, self._usage_keys,
            now - self._settings.sync_period_seconds, now))
        try:
            facts = await asyncio.to_thread(self._managers.facts, {pod.uid for pod in pods})
        except (OSError, StateFileError) as exc:
            log.error("resource_manager_state_unreadable", error=str(exc))
            raise
        result = advise(load, self._settings.cpu_targets, self._settings.memory_targets,
                        self._states.node().annotations, facts.guaranteed_cpus,
                        facts.cpu_manager_policy, facts.memory_manager_policy)
        self._latest.overcommit = result
        self._metrics.show_overcommit(result)
        if self._kube is not None:
            await self._patch_kcnr(result.annotations())
        return result

    async def _patch_kcnr(self, annotations: dict[str, str]) -> None:
        assert self._kube is not None
        if annotations == self._sent_annotations:
            return
        try:
            outcome = await asyncio.wait_for(self._kube.patch_annotations(annotations), KUBE_CALL_BUDGET_SECONDS)
        except Exception as exc:
            self._metrics.count("overcommit", "kubernetes", "failed")
            log.error("kcnr_patch_failed", node=self._latest.node_name, error=str(exc) or repr(exc))
            return
        self._metrics.count("overcommit", "kubernetes", outcome.value)
        if outcome is Outcome.WRITTEN:
            self._sent_annotations = annotations
        else:
            log.warning("kcnr_missing", node=self._latest.node_name)

    # ------------------------------------------------------------------ NodeResourceTopology
    async def _topology_round(self) -> None:
        try:
            await self.topology_once()
        except Exception:  # the runner logs it; the next round builds and compares again
            self._metrics.count("topology", "any", "failed")
            raise

    async def topology_once(self) -> NrtOutcome | None:
        """Build the object; write it when it changed (None: nothing to write to, or no topology)."""
        assert self._nrt is not None
        document = await self._nrt.build()
        self._latest.topology = document
        if document is None or self._nrt_writer is None:
            return None
        outcome = await asyncio.wait_for(self._nrt_writer.write(document), KUBE_CALL_BUDGET_SECONDS)
        if outcome is not NrtOutcome.UNCHANGED:
            self._metrics.count("topology", "kubernetes", outcome.value)
            log.info("nrt_written", node=self._latest.node_name, outcome=outcome.value)
        return outcome

    # ------------------------------------------------------------------ inputs
    def _allocatable(self) -> Allocatable:
        """kubelet's allocatable from the Node when known, else capacity, else the host's."""
        node = self._states.node()
        host = self._host or Allocatable(0, 0)
        cpu = node.allocatable.get("cpu") or node.capacity.get("cpu") or host.milli_cpu
        memory = node.allocatable.get("memory") or node.capacity.get("memory") or host.memory_bytes
        return Allocatable(int(cpu), int(memory))

