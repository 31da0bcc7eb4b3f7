"""The collectors' intervals (koordlet's metricsadvisor flags)."""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.config import defaults
from koordlet.config.option import option
from koordlet.config.parsers import parse_positive_seconds


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
