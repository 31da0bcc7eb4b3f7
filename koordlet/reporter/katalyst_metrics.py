"""Katalyst's metric names for the overcommit advisor (--CPU-metrics-to-gather,
--memory-metrics-to-gather) and the metric cache series each one reads.

Names we do not collect (per-container load averages, RSS) are accepted so a Katalyst
command line keeps working; the daemon says once at start that they contribute nothing,
and refuses a list where no name is collected (the usage would always read zero and the
ratio would be too high). Katalyst's own default memory metric is mem.rss.container; ours
is mem.usage.container (the working set the collectors gather).
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

from koordlet.metriccache.api import Metric

# Katalyst metric name -> our container series (None: known to Katalyst, not collected here).
KATALYST_METRICS: Mapping[str, Metric | None] = MappingProxyType({
    "cpu.usage.container": Metric.CONTAINER_CPU_USAGE_CORES,
    "load.1min.container": None,
    "load.5min.container": None,
    "mem.usage.container": Metric.CONTAINER_MEMORY_USAGE_BYTES,
    "mem.rss.container": None,
})
CPU_METRICS = ("cpu.usage.container", "load.1min.container", "load.5min.container")
MEMORY_METRICS = ("mem.usage.container", "mem.rss.container")


class MetricNamesError(ValueError):
    """A --*-metrics-to-gather list names an unknown metric or none we collect."""


def parse_metric_names(text: str, allowed: Sequence[str]) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise MetricNamesError("an empty metric list (use e.g. %s)" % allowed[0])
    for name in names:
        if name not in allowed:
            raise MetricNamesError("%r is not one of %s" % (name, ", ".join(allowed)))
    if all(KATALYST_METRICS[name] is None for name in names):
        collected = [n for n in allowed if KATALYST_METRICS[n] is not None]
        raise MetricNamesError("none of %s is collected by this agent (collected: %s)"
                               % (", ".join(names), ", ".join(collected)))
    return names


def uncollected(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(name for name in names if KATALYST_METRICS.get(name) is None)


def parse_cpu_metrics(text: str) -> tuple[str, ...]:
    return parse_metric_names(text, CPU_METRICS)


def parse_memory_metrics(text: str) -> tuple[str, ...]:
    return parse_metric_names(text, MEMORY_METRICS)


_PLUGIN_ITEM = re.compile(r"^(\*|-?[A-Za-z0-9_.-]+)$")


def parse_plugin_list(text: str) -> tuple[str, ...]:
    """Katalyst's --sysadvisor-plugins: comma-separated names, "-name" to turn one off, "*"."""
    items = tuple(item.strip() for item in text.split(",") if item.strip())
    for item in items:
        if not _PLUGIN_ITEM.match(item):
            raise ValueError(f"{item!r} is not a plugin name (use e.g. *,-overcommit_aware)")
    return items
