"""The overcommit advisor's inputs: Σ pod requests and Σ pod usage, gathered the way
Katalyst gathers them (realtime.go aggregateMetrics): for each pod, each metric named in
--CPU-metrics-to-gather / --memory-metrics-to-gather is summed over the pod's containers,
the pod counts with the largest of those sums, and metrics with no value count nothing.

Katalyst's metric names map to the metric cache's series. Names we do not collect
(load averages per container, RSS) are accepted so a Katalyst command line keeps working;
the daemon says once at start that they contribute nothing, and refuses a list where no
name is collected (the usage would always read zero and the ratio would be too high).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

from koordlet.metriccache.api import Metric, MetricCache, NotEnoughData, SeriesKey
from koordlet.reporter.nodemetric import pod_requests
from koordlet.reporter.overcommit import NodeLoad
from koordlet.statesinformer.model import PodInfo

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


def pod_usage(cache: MetricCache, pod: PodInfo, names: Sequence[str], start: float, end: float) -> float:
    """max over metrics of Σ containers' average in [start, end]; 0 when none has data."""
    best = 0.0
    for name in names:
        metric = KATALYST_METRICS.get(name)
        if metric is None:
            continue
        total = 0.0
        for container in pod.containers:
            try:
                total += cache.aggregate(SeriesKey.of(metric, pod.uid, container.id), start, end,
                                         min_coverage=0.0).avg
            except NotEnoughData:
                continue
        if total > best:  # Katalyst skips values <= 0
            best = total
    return best


def node_load(cache: MetricCache, pods: Iterable[PodInfo], allocatable_milli_cpu: float,
              allocatable_memory: float, cpu_names: Sequence[str], memory_names: Sequence[str],
              start: float, end: float) -> NodeLoad:
    request_cpu = request_memory = 0
    usage_cores = usage_bytes = 0.0
    for pod in pods:
        cpu, memory = pod_requests(pod)
        request_cpu += cpu
        request_memory += memory
        usage_cores += pod_usage(cache, pod, cpu_names, start, end)
        usage_bytes += pod_usage(cache, pod, memory_names, start, end)
    return NodeLoad(allocatable_milli_cpu, allocatable_memory, request_cpu, request_memory,
                    usage_cores * 1000, usage_bytes)
