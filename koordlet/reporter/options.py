"""The reporter's options: Katalyst's overcommit advisor flags keep their spelling (capitals
included), koordlet's NodeMetric policy flags and the batch reclaim thresholds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from koordlet.config import defaults
from koordlet.config.option import option
from koordlet.config.parsers import (
    at_least,
    parse_duration,
    parse_duration_list,
    parse_load,
    parse_optional_path,
    parse_percent,
    parse_positive_int,
)
from koordlet.reporter.katalyst_metrics import parse_cpu_metrics, parse_memory_metrics, parse_plugin_list

OVERCOMMIT_PLUGIN = "overcommit_aware"


@dataclass(frozen=True, slots=True)
class ReporterOptions:
    sysadvisor_plugins: tuple[str, ...] = option(
        defaults.SYSADVISOR_PLUGINS,
        "Katalyst sysadvisor plugins: * for the defaults, -overcommit_aware turns the overcommit advisor off",
        parse_plugin_list)
    realtime_overcommit_sync_period: float = option(
        defaults.REALTIME_OVERCOMMIT_SYNC_PERIOD_SECONDS, "how often the overcommit ratios are recomputed",
        parse_duration, shown_default="10s")
    realtime_overcommit_CPU_targetload: float = option(
        defaults.REALTIME_OVERCOMMIT_CPU_TARGETLOAD,
        "node CPU load the overcommit ratio aims at (Katalyst code: 0.6)", parse_load)
    realtime_overcommit_mem_targetload: float = option(
        defaults.REALTIME_OVERCOMMIT_MEM_TARGETLOAD, "node memory load the ratio aims at (Katalyst code: 0.8)",
        parse_load)
    realtime_overcommit_estimated_cpuload: float = option(
        defaults.REALTIME_OVERCOMMIT_ESTIMATED_CPULOAD,
        "least CPU load a pod is assumed to bring (Katalyst code: 0.4)", parse_load)
    realtime_overcommit_estimated_memload: float = option(
        defaults.REALTIME_OVERCOMMIT_ESTIMATED_MEMLOAD,
        "least memory load a pod is assumed to bring (Katalyst code: 0.8)", parse_load)
    CPU_metrics_to_gather: tuple[str, ...] = option(
        defaults.CPU_METRICS_TO_GATHER,
        "pod CPU usage for the overcommit ratio: largest of these (cpu.usage.container; "
        "load.1min/5min.container are not collected)",
        parse_cpu_metrics)
    memory_metrics_to_gather: tuple[str, ...] = option(
        defaults.MEMORY_METRICS_TO_GATHER,
        "pod memory usage for the overcommit ratio (mem.usage.container; mem.rss.container is not collected)",
        parse_memory_metrics)
    report_interval_seconds: int = option(
        defaults.REPORT_INTERVAL_SECONDS,
        "NodeMetric report interval when the cluster object does not set one (at least 30)",
        at_least(defaults.MIN_REPORT_INTERVAL_SECONDS, parse_positive_int))
    aggregate_duration_seconds: int = option(
        defaults.AGGREGATE_DURATION_SECONDS, "window of the NodeMetric usage averages (at least 60)",
        at_least(defaults.MIN_AGGREGATE_DURATION_SECONDS, parse_positive_int))
    aggregate_durations: tuple[float, ...] = option(
        defaults.AGGREGATE_DURATIONS_SECONDS,
        "windows of the p50/p90/p95/p99 `aggregatedNodeUsages`; the cluster spec wins", parse_duration_list,
        shown_default="5m,10m,30m")
    cpu_reclaim_threshold_percent: int = option(
        defaults.CPU_RECLAIM_THRESHOLD_PERCENT,
        "batch CPU: allocatable share not reserved (reserve = 100 - this)", parse_percent)
    memory_reclaim_threshold_percent: int = option(
        defaults.MEMORY_RECLAIM_THRESHOLD_PERCENT, "batch memory: allocatable share not reserved",
        parse_percent)
    kubelet_root_dir: Path = option(
        defaults.KUBELET_ROOT_DIR,
        "where kubelet's `cpu_manager_state` / `memory_manager_state` are read (policies, guaranteed CPUs)",
        Path)
    report_output_file: Path | None = option(
        None, "also write the reports to this JSON file (atomically)", parse_optional_path)

    def sysadvisor_plugin_enabled(self, name: str) -> bool:
        """Katalyst's plugin list: "*" turns on the default plugins, "name" one, "-name" turns one off."""
        if "-" + name in self.sysadvisor_plugins:
            return False
        return name in self.sysadvisor_plugins or "*" in self.sysadvisor_plugins

