"""The collectors' intervals (koordlet's metricsadvisor flags) and what /metrics exports of them."""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.config import defaults
from koordlet.config.option import option
from koordlet.config.parsers import parse_bool, parse_positive_seconds


@dataclass(frozen=True, slots=True)
class AdvisorOptions:
    collect_res_used_interval_seconds: float = option(
        defaults.COLLECT_RES_USED_INTERVAL_SECONDS,
        "node, pod and container usage, throttling, BE tier and network collection interval",
        parse_positive_seconds)
    psi_collector_interval_seconds: float = option(
        defaults.PSI_COLLECTOR_INTERVAL_SECONDS, "PSI collection interval (gate PSICollector)",
        parse_positive_seconds)
    cpi_collector_interval_seconds: float = option(
        defaults.CPI_COLLECTOR_INTERVAL_SECONDS, "CPI collection interval (gate CPICollector)",
        parse_positive_seconds)
    collect_cpi_timewindow_seconds: float = option(
        defaults.COLLECT_CPI_TIMEWINDOW_SECONDS, "how long perf counters count in each CPI round",
        parse_positive_seconds)
    metrics_container_series: bool = option(
        False, "/metrics: also export per-container series — usage and throttling (koordlet_container_used_"
        "cpu_cores, _memory_bytes, _cpu_throttled_ratio: ours) and koordlet_container_psi (koordlet's). Off: "
        "these figures per pod only (about 6 + 36 fewer series per pod with 2 containers and PSI); "
        "koordlet_container_cpi and _resource_requests/_limits stay per container",
        parse_bool)
