"""The overcommit advisor's inputs: Σ pod requests and Σ pod usage, gathered the way
Katalyst gathers them (realtime.go aggregateMetrics): for each pod, each metric named in
--CPU-metrics-to-gather / --memory-metrics-to-gather is summed over the pod's containers,
the pod counts with the largest of those sums, and metrics with no value count nothing.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from koordlet.metriccache.api import MetricCache, SeriesKey
from koordlet.reporter.katalyst_metrics import KATALYST_METRICS
from koordlet.reporter.nodemetric import pod_requests
from koordlet.reporter.overcommit import NodeLoad
from koordlet.statesinformer.model import PodInfo
from koordlet.statesinformer.pod_memo import PodMemo
from koordlet.util.steps import PODS_PER_STEP, Steps, run_steps


def usage_keys(pod: PodInfo, names: Sequence[str],
               share: Callable[[SeriesKey], SeriesKey]) -> tuple[tuple[SeriesKey, ...], ...]:
    """For each metric name this agent collects, the series of the pod's containers (in
    their order), through `share` (the cache's shared_key). Tuples, kept a pod: a list of
    two built this way is 88 bytes in two blocks, a tuple 56 in one."""
    metrics = [metric for metric in map(KATALYST_METRICS.get, names) if metric is not None]
    return tuple(tuple(share(SeriesKey.of(metric, pod.uid, container.id)) for container in pod.containers)
                 for metric in metrics)


class UsageKeys(PodMemo[tuple[tuple[tuple[SeriesKey, ...], ...], tuple[tuple[SeriesKey, ...], ...]]]):
    """The series each pod's usage is read from (cpu, memory), made again only for a pod
    that changed: building them for every container every round was a tenth of the
    overcommit round."""

    def __init__(self, cpu_names: Sequence[str], memory_names: Sequence[str],
                 share: Callable[[SeriesKey], SeriesKey]) -> None:
        super().__init__(lambda pod: (usage_keys(pod, cpu_names, share), usage_keys(pod, memory_names, share)))


def pod_usage(averages: Mapping[SeriesKey, float], keys_by_metric: Sequence[Sequence[SeriesKey]]) -> float:
    """max over metrics of the sum of the containers' averages; a container with no sample
    in the window counts nothing, and so does a pod with none (0)."""
    best = 0.0
    for keys in keys_by_metric:
        total = 0.0
        for key in keys:
            average = averages.get(key)
            if average is not None:
                total += average
        if total > best:  # Katalyst skips values <= 0
            best = total
    return best


def window_averages(cache: MetricCache, keys: Sequence[SeriesKey], start: float, end: float) -> dict[SeriesKey, float]:
    """The average in [start, end] of each series with a sample in it, in one cache call."""
    spans, means, _ = cache.summary_columns(keys, start, end, [()] * len(keys))
    return {key: mean for key, mean, span in zip(keys, means, spans) if span is not None}


def node_load(cache: MetricCache, pods: Iterable[PodInfo], allocatable_milli_cpu: float,
              allocatable_memory: float, cpu_names: Sequence[str], memory_names: Sequence[str],
              start: float, end: float) -> NodeLoad:
    return run_steps(node_load_steps(cache, pods, allocatable_milli_cpu, allocatable_memory,
                                     UsageKeys(cpu_names, memory_names, cache.shared_key), start, end))


def node_load_steps(cache: MetricCache, pods: Iterable[PodInfo], allocatable_milli_cpu: float,
                    allocatable_memory: float, keys: UsageKeys, start: float, end: float) -> Steps[NodeLoad]:
    """node_load, yielding every PODS_PER_STEP pods (see steps.py); each step reads the
    window averages of its pods' containers in one cache call."""
    request_cpu = request_memory = 0
    usage_cores = usage_bytes = 0.0
    listed = list(pods)
    for at in range(0, len(listed), PODS_PER_STEP):
        if at:
            yield
        step = [(pod, *keys.of(pod)) for pod in listed[at:at + PODS_PER_STEP]]
        averages = window_averages(cache, [key for _, cpu, memory in step for keys in (*cpu, *memory) for key in keys],
                                   start, end)
        for pod, cpu, memory in step:
            pod_cpu, pod_memory = pod_requests(pod)
            request_cpu += pod_cpu
            request_memory += pod_memory
            usage_cores += pod_usage(averages, cpu)
            usage_bytes += pod_usage(averages, memory)
    keys.keep_only(listed)
    return NodeLoad(allocatable_milli_cpu, allocatable_memory, request_cpu, request_memory,
                    usage_cores * 1000, usage_bytes)
