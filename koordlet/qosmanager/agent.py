"""The QoS manager agent: which strategies run (feature gates), with what intervals, and
the context they share (the hubs, a cgroup reader, the eviction path)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

import structlog

from koordlet.agent import NOTHING, AgentSpec, Built
from koordlet.qosmanager.dirs import QoSDirs
from koordlet.qosmanager.eviction import CgroupKillEvictor, DisabledEvictor, EvictionPath, Evictor
from koordlet.qosmanager.framework import QoSContext, QoSManager, Strategy
from koordlet.qosmanager.metrics import QoSMetrics
from koordlet.qosmanager.options import QoSOptions
from koordlet.qosmanager.usage import LAST_MAX_AGE
from koordlet.util.kube_client import KubeApi, KubeClientError
from resourceexecutor import ResourceExecutor
from system.cgroup_readers import CgroupReader

if TYPE_CHECKING:
    from koordlet.config import Config
    from koordlet.hubs import Hubs
    from koordlet.metriccache.store import MetricStore

log = structlog.get_logger(__name__)


# Each strategy's module is imported only when its gate is on (the two evictions are off by
# default, and with every gate off the manager is not built at all).
def _cpu_suppress(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.cpu_suppress import CPUSuppress
    return CPUSuppress(interval=options.cpu_suppress_interval_seconds)


def _memory_evict(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.memory_evict import MemoryEvict
    return MemoryEvict(interval=options.memory_evict_interval_seconds, cool_down=options.memory_evict_cool_time_seconds)


def _cpu_evict(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.cpu_evict import CPUEvict
    return CPUEvict(interval=options.cpu_evict_interval_seconds, cool_down=options.cpu_evict_cool_time_seconds)


def _cpu_burst(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.cpu_burst import CPUBurst
    return CPUBurst(interval=options.reconcile_interval_seconds)


def _memory_qos(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.memory_qos import MemoryQoS
    return MemoryQoS(interval=options.reconcile_interval_seconds)


def _resctrl(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.resctrl import ResctrlQoS
    return ResctrlQoS(interval=options.reconcile_interval_seconds)


# (feature gate, its strategy), in koordlet's order; each strategy's own `gate` is the same name
STRATEGIES: tuple[tuple[str, Callable[[QoSOptions], Strategy]], ...] = (
    ("BECPUSuppress", _cpu_suppress),
    ("BEMemoryEvict", _memory_evict),
    ("BECPUEvict", _cpu_evict),
    ("CPUBurst", _cpu_burst),
    ("CgroupReconcile", _memory_qos),
    ("RdtResctrl", _resctrl),
)


def any_strategy_on(config: Config) -> bool:
    return any(config.common.feature_gates.enabled(gate) for gate, _ in STRATEGIES)


def strategies_for(config: Config) -> list[Strategy]:
    """The strategies whose feature gate is on, in koordlet's order."""
    gates = config.common.feature_gates
    return [make(config[QoSOptions]) for gate, make in STRATEGIES if gates.enabled(gate)]


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


SPEC = AgentSpec("qosmanager", enabled=any_strategy_on, build=build,
                 options=QoSOptions)
