"""The QoS manager assembled from the hubs: its metrics, its eviction path and the context its
strategies share. Imported by koordlet.qosmanager.agent only once the manager is built (a host
with a cgroup hierarchy): the framework and the eviction path are ~0.1 s of imports."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Sequence

import structlog

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


def manager_for(hubs: Hubs, strategies: Sequence[Strategy]) -> QoSManager:
    """The manager running `strategies`, its counters on /metrics."""
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

    return QoSManager(strategies, context, hubs.registry)
