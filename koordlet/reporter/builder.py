"""Wiring of the reporter: `build_reports(hubs)` for app.MODULE_BUILDERS."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import structlog

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
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from system.host import Host
from system.procfs import read_meminfo
from system.topology import read_online_cpus

if TYPE_CHECKING:
    from koordlet.daemon.wiring import Hubs

log = structlog.get_logger(__name__)

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


def host_allocatable(host: Host) -> Callable[[], Allocatable]:
    """The host's CPUs and memory (standalone, or before the Node object is known)."""
    def read() -> Allocatable:
        return Allocatable(len(read_online_cpus(host)) * 1000, read_meminfo(host).total_bytes)

    return read


def kube_sink_factory(config: Config) -> Callable[[], tuple[KubeSink, Callable[[], Any]]]:
    def open_sink() -> tuple[KubeSink, Callable[[], Any]]:
        client = open_kube_client(config)
        return KubeSink(client, config.node_name), client.close

    return open_sink


def build_reports(hubs: "Hubs") -> list[ReportsModule]:
    """The reporter module, or nothing when both reports are off or there is no metric cache."""
    config: Config = hubs.config
    settings = settings_of(config)
    if not (settings.node_metric or settings.overcommit):
        return []
    if hubs.metric_cache is None:
        log.warning("reports_disabled", reason="no metric cache in this daemon")
        return []
    states = hubs.states
    if states is None:
        log.warning("reports_without_pods", reason="no states informer in this daemon: node figures only")
        states = StaticStates(NodeInfo(config.node_name))
    latest = LatestReports(config.node_name)
    add_routes(hubs.http, latest)
    module = ReportsModule(settings, states, hubs.metric_cache, KubeletStateFiles(config.kubelet_root_dir),
                           ReportMetrics(hubs.registry, config.node_name), latest, host_allocatable(hubs.host),
                           None if config.standalone else kube_sink_factory(config))
    return [module]
