"""The overcommit advisor's inputs: Σ pod requests and Σ pod usage, gathered the way
Katalyst gathers them (realtime.go aggregateMetrics): for each pod, each metric named in
--CPU-metrics-to-gather / --memory-metrics-to-gather is summed over the pod's containers,
the pod counts with the largest of those sums, and metrics with no value count nothing.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from koordlet.metriccache.api import MetricCache, NotEnoughData, SeriesKey
from koordlet.reporter.katalyst_metrics import KATALYST_METRICS
from koordlet.reporter.nodemetric import pod_requests
from koordlet.reporter.overcommit import NodeLoad
from koordlet.statesinformer.model import PodInfo
from koordlet.util.steps import PODS_PER_STEP, Steps, run_steps


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
                total += cache.mean(SeriesKey.of(metric, pod.uid, container.id), start, end,
                                    min_coverage=0.0).avg
            except NotEnoughData:
                continue
        if total > best:  # Katalyst skips values <= 0
            best = total
    return best


def node_load(cache: MetricCache, pods: Iterable[PodInfo], allocatable_milli_cpu: float,
              allocatable_memory: float, cpu_names: Sequence[str], memory_names: Sequence[str],
              start: float, end: float) -> NodeLoad:
    return run_steps(node_load_steps(cache, pods, allocatable_milli_cpu, allocatable_memory,
                                     cpu_names, memory_names, start, end))


def node_load_steps(cache: MetricCache, pods: Iterable[PodInfo], allocatable_milli_cpu: float,
                    allocatable_memory: float, cpu_names: Sequence[str], memory_names: Sequence[str],
                    start: float, end: float) -> Steps[NodeLoad]:
    """node_load, yielding every PODS_PER_STEP pods (see steps.py)."""
    request_cpu = request_memory = 0
    usage_cores = usage_bytes = 0.0
    for index, pod in enumerate(pods):
        if index % PODS_PER_STEP == PODS_PER_STEP - 1:
            yield
        cpu, memory = pod_requests(pod)
        request_cpu += cpu
        request_memory += memory
        usage_cores += pod_usage(cache, pod, cpu_names, start, end)
        usage_bytes += pod_usage(cache, pod, memory_names, start, end)
    return NodeLoad(allocatable_milli_cpu, allocatable_memory, request_cpu, request_memory,
                    usage_cores * 1000, usage_bytes)
