"""The collectors' intervals (koordlet's metricsadvisor flags) and what /metrics exports of them."""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.config import defaults
from koordlet.config.option import option
from koordlet.config.parsers import parse_bool, parse_list, parse_positive_seconds

PSI_PRECISIONS = ("avg10", "avg60", "avg300")  # koordlet's psi_precision values


def parse_psi_precisions(text: str) -> tuple[str, ...]:
    wanted = parse_list(text)
    unknown = sorted(set(wanted) - set(PSI_PRECISIONS))
    if unknown or not wanted:
        raise ValueError("%r: give one or more of %s" % (text, ",".join(PSI_PRECISIONS)))
    return tuple(p for p in PSI_PRECISIONS if p in wanted)


@dataclass(frozen=True, slots=True)
class AdvisorOptions:
    collect_res_used_interval_seconds: float = option(
        defaults.COLLECT_RES_USED_INTERVAL_SECONDS,
        "node, pod and container usage, throttling, BE tier and network collection interval",
        parse_positive_seconds)
    collect_container_res_used_interval_seconds: float = option(
        defaults.COLLECT_CONTAINER_RES_USED_INTERVAL_SECONDS,
        "container usage collection interval, and the throttling collector's (koordlet: both the pods' "
        "interval), rounded to a multiple of collect-res-used-interval; each round reads an even share of the "
        "containers, pod usage is still read every collect-res-used-interval. At 1,000 pods of 2 containers "
        "10 s reads about 3,000 files a second instead of 9,300",
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
    metrics_psi_precisions: tuple[str, ...] = option(
        ("avg10",), "/metrics: the PSI averages exported (psi_precision of koordlet_{node,pod,container}_psi), "
        "comma-separated of avg10,avg60,avg300 (koordlet: all three). avg10 alone is 6 series per object instead "
        "of 18; it is the one the metric cache keeps and QoS reads, and the longer windows can be had from it in "
        "PromQL (avg_over_time)",
        parse_psi_precisions, shown_default="avg10")
