"""The QoS manager agent: which strategies run (feature gates), with what intervals, and
the context they share (the hubs, a cgroup reader, the eviction path)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import structlog

from koordlet.agent import NOTHING, AgentSpec, Built
from koordlet.qosmanager.cpu_burst import CPUBurst
from koordlet.qosmanager.cpu_evict import CPUEvict
from koordlet.qosmanager.cpu_suppress import CPUSuppress
from koordlet.qosmanager.dirs import QoSDirs
from koordlet.qosmanager.eviction import CgroupKillEvictor, DisabledEvictor, EvictionPath, Evictor
from koordlet.qosmanager.framework import QoSContext, QoSManager, Strategy
from koordlet.qosmanager.memory_evict import MemoryEvict
from koordlet.qosmanager.memory_qos import MemoryQoS
from koordlet.qosmanager.metrics import QoSMetrics
from koordlet.qosmanager.options import QoSOptions
from koordlet.qosmanager.resctrl import ResctrlQoS
from koordlet.qosmanager.usage import LAST_MAX_AGE
from koordlet.util.kube_client import KubeApi, KubeClientError
from resourceexecutor import ResourceExecutor
from system.cgroup_readers import CgroupReader

if TYPE_CHECKING:
    from koordlet.config import Config
    from koordlet.hubs import Hubs
    from koordlet.metriccache.store import MetricStore

log = structlog.get_logger(__name__)


def strategies_for(config: Config) -> list[Strategy]:
    """The strategies whose feature gate is on, in koordlet's order."""
    gates = config.common.feature_gates
    candidates: list[Strategy] = [
        CPUSuppress(interval=config[QoSOptions].cpu_suppress_interval_seconds),
        MemoryEvict(interval=config[QoSOptions].memory_evict_interval_seconds,
                    cool_down=config[QoSOptions].memory_evict_cool_time_seconds),
        CPUEvict(interval=config[QoSOptions].cpu_evict_interval_seconds, cool_down=config[QoSOptions].cpu_evict_cool_time_seconds),
        CPUBurst(interval=config[QoSOptions].reconcile_interval_seconds),
        MemoryQoS(interval=config[QoSOptions].reconcile_interval_seconds),
        ResctrlQoS(interval=config[QoSOptions].reconcile_interval_seconds),
    ]
    return [s for s in candidates if gates.enabled(s.gate)]


def _evictor(config: Config, kube: KubeApi, executor: ResourceExecutor, reader: CgroupReader,
             metrics: QoSMetrics | None = None) -> Evictor:
    """Standalone: cgroup kills when opted in. Kubernetes mode: the Eviction API through the
    daemon's lightkube client (opened here, in the manager's start; closed at its stop)."""
    if config.common.standalone:
        return CgroupKillEvictor(executor, reader) if config[QoSOptions].qos_standalone_eviction else DisabledEvictor()
    try:
        client = kube.acquire()
    except KubeClientError as exc:
        log.warning("pod_eviction_unavailable", reason=str(exc))
        return DisabledEvictor()
    from koordlet.qosmanager.api_evictor import ApiEvictor, LightkubeEvictionApi  # cluster mode only

    api = LightkubeEvictionApi(client, kube.release)
    if metrics is None:
        return ApiEvictor(api, config.common.node_name)
    return ApiEvictor(api, config.common.node_name, not_done=metrics.eviction_not_done)


def container_sample_age(cache: MetricStore) -> float:
    """Two container collection intervals and a little more, as for pods (UsageView)."""
    return max(LAST_MAX_AGE, 2 * cache.policy.container_sample_interval + 1)


def build(hubs: Hubs) -> Built:
    strategies = strategies_for(hubs.config)
    if not hubs.facts.has_cgroups:
        log.warning("qos_manager_idle", reason=hubs.facts.cgroup_error)
        return NOTHING
    metrics = QoSMetrics(hubs.registry, hubs.config.common.node_name)
    hubs.http.add_metrics_text(metrics.render_koordlet_counters)
    executor = hubs.executor

    def context() -> QoSContext:
        """Made at the manager's start: the Kubernetes evictor opens its client there."""
        # open-read-close: CPU burst reads every limited container's cfs quota each round, more
        # files than the daemon's fd budget (it kept 1,200 fds of its own at 1,000 pods)
        reader = CgroupReader(executor.files, keep_open=False)
        return QoSContext(hubs.states, hubs.metric_cache, hubs.node_slo, executor, reader,
                          EvictionPath(_evictor(hubs.config, hubs.kube, executor, reader, metrics), metrics, time.time),
                          metrics, QoSDirs(hubs.facts.driver), hubs.host, hubs.facts.topology,
                          be_suppress=hubs.be_suppress, container_sample_age=container_sample_age(hubs.metric_cache))

    return Built((QoSManager(strategies, context, hubs.registry),))


SPEC = AgentSpec("qosmanager", enabled=lambda config: bool(strategies_for(config)), build=build,
                 options=QoSOptions)
