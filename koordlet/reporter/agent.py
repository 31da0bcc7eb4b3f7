"""The reporter agent: NodeMetric, Katalyst overcommit ratios and batch resources, from the
metric cache and the states informer, to the API server or the standalone routes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable


from koordlet.agent import AgentSpec, Built
from koordlet.config import Config
from koordlet.util.kube_client import open_kube_client
from koordlet.reporter.batch import ReclaimThresholds
from koordlet.reporter.kube_sink import KubeSink
from koordlet.reporter.module import Allocatable, ReportSettings, ReportsModule
from koordlet.reporter.overcommit import LoadTargets
from koordlet.reporter.policy import MetricCollectPolicy
from koordlet.reporter.report_metrics import ReportMetrics
from koordlet.reporter.resource_managers import KubeletStateFiles
from koordlet.reporter.standalone import LatestReports, add_routes
from koordlet.util.host_facts import HostFacts

if TYPE_CHECKING:
    from koordlet.hubs import Hubs


OVERCOMMIT_PLUGIN = "overcommit_aware"


def settings_of(config: Config) -> ReportSettings:
    return ReportSettings(
        policy=MetricCollectPolicy(config.aggregate_duration_seconds, config.report_interval_seconds,
                                   config.aggregate_durations),
        node_metric=config.feature_gates.enabled("NodeMetricReport"),
        overcommit=(config.feature_gates.enabled("OvercommitReport")
                    and config.sysadvisor_plugin_enabled(OVERCOMMIT_PLUGIN)),
        sync_period_seconds=max(config.realtime_overcommit_sync_period, 1.0),
        cpu_targets=LoadTargets(config.realtime_overcommit_CPU_targetload,
                                config.realtime_overcommit_estimated_cpuload),
        memory_targets=LoadTargets(config.realtime_overcommit_mem_targetload,
                                   config.realtime_overcommit_estimated_memload),
        cpu_metrics=config.CPU_metrics_to_gather,
        memory_metrics=config.memory_metrics_to_gather,
        thresholds=ReclaimThresholds(config.cpu_reclaim_threshold_percent, config.memory_reclaim_threshold_percent),
        output_file=config.report_output_file,
    )


def host_allocatable(facts: HostFacts) -> Callable[[], Allocatable]:
    """The host's CPUs and memory (standalone, or before the Node object is known)."""
    allocatable = Allocatable(len(facts.online_cpus) * 1000, facts.memory_bytes or 0)
    return lambda: allocatable


def kube_sink_factory(config: Config) -> Callable[[], tuple[KubeSink, Callable[[], Any]]]:
    def open_sink() -> tuple[KubeSink, Callable[[], Any]]:
        client = open_kube_client(config)
        return KubeSink(client, config.node_name), client.close

    return open_sink


def build(hubs: Hubs) -> Built:
    config = hubs.config
    latest = LatestReports(config.node_name)
    add_routes(hubs.http, latest)
    module = ReportsModule(settings_of(config), hubs.states, hubs.metric_cache,
                           KubeletStateFiles(config.kubelet_root_dir),
                           ReportMetrics(hubs.registry, config.node_name), latest, host_allocatable(hubs.facts),
                           None if config.standalone else kube_sink_factory(config))
    return Built((module,))


def enabled(config: Config) -> bool:
    settings = settings_of(config)
    return settings.node_metric or settings.overcommit


SPEC = AgentSpec("reporter", enabled=enabled, build=build)
