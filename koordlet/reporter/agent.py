"""The reporter agent: NodeMetric, Katalyst overcommit ratios and batch resources, from the
metric cache and the states informer, and the NodeResourceTopology, from the ORM's zones
or the host's, to the API server or the standalone routes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from koordlet.agent import AgentSpec, Built
from koordlet.config import Config
from koordlet.reporter.batch import ReclaimThresholds
from koordlet.reporter.kube_sink import KubeSink
from koordlet.reporter.module import Allocatable, ReportSettings, ReportsModule
from koordlet.reporter.nrt_source import NrtSource
from koordlet.reporter.options import ReporterOptions
from koordlet.reporter.overcommit import LoadTargets
from koordlet.reporter.policy import MetricCollectPolicy
from koordlet.reporter.report_metrics import ReportMetrics
from koordlet.reporter.resource_managers import KubeletStateFiles
from koordlet.reporter.standalone import LatestReports, add_routes
from koordlet.util.host_facts import HostFacts
from koordlet.util.kube_client import KubeApi

if TYPE_CHECKING:
    from koordlet.hubs import Hubs


OVERCOMMIT_PLUGIN = "overcommit_aware"


def settings_of(config: Config) -> ReportSettings:
    return ReportSettings(
        policy=MetricCollectPolicy(config[ReporterOptions].aggregate_duration_seconds, config[ReporterOptions].report_interval_seconds,
                                   config[ReporterOptions].aggregate_durations),
        node_metric=config.common.feature_gates.enabled("NodeMetricReport"),
        overcommit=(config.common.feature_gates.enabled("OvercommitReport")
                    and config[ReporterOptions].sysadvisor_plugin_enabled(OVERCOMMIT_PLUGIN)),
        sync_period_seconds=max(config[ReporterOptions].realtime_overcommit_sync_period, 1.0),
        cpu_targets=LoadTargets(config[ReporterOptions].realtime_overcommit_CPU_targetload,
                                config[ReporterOptions].realtime_overcommit_estimated_cpuload),
        memory_targets=LoadTargets(config[ReporterOptions].realtime_overcommit_mem_targetload,
                                   config[ReporterOptions].realtime_overcommit_estimated_memload),
        cpu_metrics=config[ReporterOptions].CPU_metrics_to_gather,
        memory_metrics=config[ReporterOptions].memory_metrics_to_gather,
        thresholds=ReclaimThresholds(config[ReporterOptions].cpu_reclaim_threshold_percent, config[ReporterOptions].memory_reclaim_threshold_percent),
        output_file=config[ReporterOptions].report_output_file,
        topology=config.common.feature_gates.enabled("NodeTopologyReport"),
    )


def host_allocatable(facts: HostFacts) -> Callable[[], Allocatable]:
    """The host's CPUs and memory (standalone, or before the Node object is known)."""
    allocatable = Allocatable(len(facts.online_cpus) * 1000, facts.memory_bytes or 0)
    return lambda: allocatable


def kube_sink_factory(config: Config, kube: KubeApi) -> Callable[[], tuple[KubeSink, Callable[[], Any]]]:
    """The sink over the daemon's shared client; its closer lets go of the client."""
    def open_sink() -> tuple[KubeSink, Callable[[], Any]]:
        return KubeSink(kube.acquire(), config.common.node_name), kube.release

    return open_sink


def build(hubs: Hubs) -> Built:
    config = hubs.config
    latest = LatestReports(config.common.node_name)
    add_routes(hubs.http, latest)
    kubelet = KubeletStateFiles(config[ReporterOptions].kubelet_root_dir)
    nrt = NrtSource(config.common.node_name, hubs.facts.topology, hubs.ports.zones, kubelet)
    module = ReportsModule(settings_of(config), hubs.states, hubs.metric_cache, kubelet,
                           ReportMetrics(hubs.registry, config.common.node_name), latest,
                           host_allocatable(hubs.facts),
                           None if config.common.standalone else kube_sink_factory(config, hubs.kube),
                           registry=hubs.registry, nrt=nrt)
    return Built((module,))


def enabled(config: Config) -> bool:
    settings = settings_of(config)
    return settings.node_metric or settings.overcommit or settings.topology


SPEC = AgentSpec("reporter", enabled=enabled, build=build,
                 options=ReporterOptions)
