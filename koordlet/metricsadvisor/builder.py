"""Wiring of the metric cache and the metrics advisor into the daemon (MODULE_BUILDERS)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from koordlet.metriccache.module import MetricCacheModule
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.collectors.be_resource import BEResourceCollector
from koordlet.metricsadvisor.collectors.cpi import CPICollector
from koordlet.metricsadvisor.collectors.network import NetworkCollector
from koordlet.metricsadvisor.collectors.node_resource import NodeResourceCollector
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.collectors.pod_throttled import PodThrottledCollector
from koordlet.metricsadvisor.collectors.psi import PSICollector
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.metricsadvisor.framework import Collector
from koordlet.metricsadvisor.module import MetricsAdvisorModule

if TYPE_CHECKING:
    from koordlet.daemon.wiring import Hubs
    from koordlet.config import Config
    from koordlet.daemon.lifecycle import Module


def collectors_for(config: Config) -> list[Collector]:
    """Every collector whose feature gate is on, in run order (node before pods)."""
    res = config.collect_res_used_interval_seconds
    candidates: list[Collector] = [
        NodeResourceCollector(res),
        PodResourceCollector(res),
        PodThrottledCollector(res),
        BEResourceCollector(res),
        NetworkCollector(res),
        PSICollector(config.psi_collector_interval_seconds),
        CPICollector(config.cpi_collector_interval_seconds, config.collect_cpi_timewindow_seconds),
    ]
    return [c for c in candidates if c.gate is None or config.feature_gates.enabled(c.gate)]


def retention_for(config: Config) -> RetentionPolicy:
    return RetentionPolicy(node_seconds=config.metric_expire_seconds,
                           pod_seconds=config.pod_metric_expire_seconds,
                           container_seconds=config.container_metric_expire_seconds,
                           min_sample_interval=min(config.collect_res_used_interval_seconds, 1.0))


def build_metrics_advisor(hubs: Hubs) -> list[Module]:
    """Provides hubs.metric_cache; runs after the states informer's builder (pods from
    hubs.states; without one, only node-level collectors run)."""
    config = hubs.config
    store = MetricStore(retention_for(config))
    hubs.metric_cache = store
    collectors = collectors_for(config)
    advisor = MetricsAdvisorModule(hubs.host, store, hubs.states, config.node_name, collectors, hubs.fd_pool)
    psi = next((c for c in collectors if isinstance(c, PSICollector)), None)
    exporter = AdvisorExporter(store, hubs.states, config.node_name, advisor.scheduler.stats,
                               psi=(lambda: psi.snapshot) if psi is not None else dict)
    hubs.http.add_metrics_text(exporter.render)
    cache_module = MetricCacheModule(store, config.state_dir, gc_interval=config.metric_gc_interval_seconds)
    return [cache_module, advisor]
