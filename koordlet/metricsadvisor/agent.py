"""The metrics advisor agent: the collectors whose gates are on, filling the daemon's
metric cache hub, and their figures appended to /metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from koordlet.agent import AgentSpec, Built
from koordlet.config import Config
from koordlet.metricsadvisor.collectors.be_resource import BEResourceCollector
from koordlet.metricsadvisor.collectors.network import NetworkCollector
from koordlet.metricsadvisor.collectors.node_resource import NodeResourceCollector
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.collectors.pod_throttled import PodThrottledCollector
from koordlet.metricsadvisor.collectors.psi import PSICollector
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.metricsadvisor.framework import Collector
from koordlet.metricsadvisor.module import MetricsAdvisorModule
from koordlet.metricsadvisor.options import AdvisorOptions

if TYPE_CHECKING:
    from koordlet.hubs import Hubs


def collectors_for(config: Config) -> list[Collector]:
    """Every collector whose feature gate is on, in run order (node before pods)."""
    options = config[AdvisorOptions]
    res = options.collect_res_used_interval_seconds
    containers = max(res, options.collect_container_res_used_interval_seconds)
    candidates: list[Collector] = [
        NodeResourceCollector(res),
        PodResourceCollector(res, containers),
        PodThrottledCollector(containers),
        BEResourceCollector(res),
        NetworkCollector(res),
        # container PSI has no reader but the container series of /metrics: read only for them
        PSICollector(options.psi_collector_interval_seconds, containers=options.metrics_container_series),
    ]
    if config.common.feature_gates.enabled("CPICollector"):  # off by default: perf_event_open's module stays unloaded
        from koordlet.metricsadvisor.collectors.cpi import CPICollector

        candidates.append(CPICollector(options.cpi_collector_interval_seconds, options.collect_cpi_timewindow_seconds))
    return [c for c in candidates if c.gate is None or config.common.feature_gates.enabled(c.gate)]


def build(hubs: Hubs) -> Built:
    config = hubs.config
    collectors = collectors_for(config)
    advisor = MetricsAdvisorModule(hubs.facts, hubs.metric_cache, hubs.states, config.common.node_name, collectors,
                                   hubs.fd_pool)
    psi = next(iter(c for c in collectors if isinstance(c, PSICollector)), None)
    exporter = AdvisorExporter(hubs.metric_cache, hubs.states, config.common.node_name, advisor.scheduler.stats,
                               psi=(lambda: psi.snapshot) if psi is not None else dict,
                               container_series=config[AdvisorOptions].metrics_container_series,
                               psi_precisions=config[AdvisorOptions].metrics_psi_precisions)
    hubs.http.add_metrics_parts(exporter.render_parts)
    return Built((advisor,))


SPEC = AgentSpec("metricsadvisor", enabled=lambda config: True, build=build,
                 options=AdvisorOptions)
