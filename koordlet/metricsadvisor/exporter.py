"""Prometheus exposition of the collected figures with koordlet's names and labels.

A custom collector: at each scrape it walks the pods the states informer lists now and
reads each series' latest sample from the metric cache. Labels therefore come only from
live objects (a deleted pod or stopped container disappears at the next scrape; no label
set outlives its object), and a sample older than ``stale_after`` is left out.

Names (anchors.md section 2.4): koordlet_container_cpi{cpi_field}, koordlet_container_psi
and koordlet_pod_psi {psi_resource_type (cpu/mem/io), psi_precision, psi_degree,
cpu_full_supported}, koordlet_node_used_cpu_cores / _memory_bytes (koordlet HEAD). koordlet
has no per-pod usage gauges; ours follow its style: koordlet_{pod,container}_used_*.
"""

from __future__ import annotations

import time
from typing import Callable, Iterable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric as PromMetric
from prometheus_client.registry import Collector

from koordlet.metriccache.api import Metric, MetricCache, SeriesKey
from koordlet.metricsadvisor.collectors.psi import KINDS, LABELS, WINDOWS
from koordlet.metricsadvisor.framework import CollectorStats
from koordlet.statesinformer.api import StatesInformer
from system.psi import PSI_RESOURCES

DEFAULT_STALE_AFTER = 150.0  # > the CPI interval plus its window

POD_LABELS = ["node", "pod_uid", "pod_name", "pod_namespace"]
CONTAINER_LABELS = ["node", "container_id", "container_name", "pod_uid", "pod_name", "pod_namespace"]
PSI_LABELS = ["psi_resource_type", "psi_precision", "psi_degree", "cpu_full_supported"]
_PSI_RESOURCE_LABEL = {"cpu": "cpu", "memory": "mem", "io": "io"}  # koordlet's spelling


class AdvisorExporter(Collector):
    def __init__(self, cache: MetricCache, states: StatesInformer | None, node_name: str,
                 stats: Callable[[], dict[str, CollectorStats]] = dict,
                 clock: Callable[[], float] = time.time, stale_after: float = DEFAULT_STALE_AFTER) -> None:
        self._cache = cache
        self._states = states
        self._node = node_name
        self._stats = stats
        self._clock = clock
        self._stale_after = stale_after

    def describe(self) -> Iterable[PromMetric]:
        return []  # families depend on what was collected; no registration-time check

    def _value(self, key: SeriesKey, oldest: float) -> float | None:
        sample = self._cache.latest(key)
        if sample is None or sample.timestamp < oldest:
            return None
        return sample.value

    def collect(self) -> Iterator[PromMetric]:
        oldest = self._clock() - self._stale_after
        yield from self._node_families(oldest)
        if self._states is not None:
            yield from self._pod_families(oldest)
        yield from self._self_families()

    def _node_families(self, oldest: float) -> Iterator[PromMetric]:
        for name, help_text, metric in (
            ("koordlet_node_used_cpu_cores", "Number of cpu cores used by node in realtime",
             Metric.NODE_CPU_USAGE_CORES),
            ("koordlet_node_used_memory_bytes", "Memory used by node in realtime",
             Metric.NODE_MEMORY_USAGE_BYTES),
            ("koordlet_be_used_cpu_cores", "Number of cpu cores used by the best-effort tier",
             Metric.BE_CPU_USAGE_CORES),
            ("koordlet_be_cpu_limit_cores", "Real CPU limit of the best-effort tier in cores",
             Metric.BE_CPU_LIMIT_CORES),
        ):
            value = self._value(SeriesKey.of(metric), oldest)
            if value is not None:
                family = GaugeMetricFamily(name, help_text, labels=["node"])
                family.add_metric([self._node], value)
                yield family
        psi = GaugeMetricFamily("koordlet_node_psi", "Node psi collected by koordlet",
                                labels=["node", *PSI_LABELS])
        self._add_psi(psi, [self._node], Metric.NODE_PSI.value, "", "", oldest)
        if psi.samples:
            yield psi

    def _pod_families(self, oldest: float) -> Iterator[PromMetric]:
        assert self._states is not None
        node = self._node
        pod_cpu = GaugeMetricFamily("koordlet_pod_used_cpu_cores", "Number of cpu cores used by pod",
                                    labels=POD_LABELS)
        pod_mem = GaugeMetricFamily("koordlet_pod_used_memory_bytes", "Memory working set of pod",
                                    labels=POD_LABELS)
        pod_thr = GaugeMetricFamily("koordlet_pod_cpu_throttled_ratio",
                                    "Throttled CFS periods over periods of pod", labels=POD_LABELS)
        pod_psi = GaugeMetricFamily("koordlet_pod_psi", "Pod psi collected by koordlet",
                                    labels=POD_LABELS + PSI_LABELS)
        ctr_cpu = GaugeMetricFamily("koordlet_container_used_cpu_cores",
                                    "Number of cpu cores used by container", labels=CONTAINER_LABELS)
        ctr_mem = GaugeMetricFamily("koordlet_container_used_memory_bytes",
                                    "Memory working set of container", labels=CONTAINER_LABELS)
        ctr_thr = GaugeMetricFamily("koordlet_container_cpu_throttled_ratio",
                                    "Throttled CFS periods over periods of container", labels=CONTAINER_LABELS)
        ctr_psi = GaugeMetricFamily("koordlet_container_psi", "Container psi collected by koordlet",
                                    labels=CONTAINER_LABELS + PSI_LABELS)
        ctr_cpi = GaugeMetricFamily("koordlet_container_cpi", "Container cpi collected by koordlet",
                                    labels=CONTAINER_LABELS + ["cpi_field"])
        value = self._value
        for pod in self._states.pods():
            uid = pod.uid
            pod_labels = [node, uid, pod.name, pod.namespace]
            for family, metric in ((pod_cpu, Metric.POD_CPU_USAGE_CORES), (pod_mem, Metric.POD_MEMORY_USAGE_BYTES),
                                   (pod_thr, Metric.POD_CPU_THROTTLED_RATIO)):
                v = value(SeriesKey(metric.value, uid), oldest)
                if v is not None:
                    family.add_metric(pod_labels, v)
            self._add_psi(pod_psi, pod_labels, Metric.POD_PSI.value, uid, "", oldest)
            for container in pod.running_containers:
                cid = container.id
                labels = [node, cid, container.name, uid, pod.name, pod.namespace]
                for family, metric in ((ctr_cpu, Metric.CONTAINER_CPU_USAGE_CORES),
                                       (ctr_mem, Metric.CONTAINER_MEMORY_USAGE_BYTES),
                                       (ctr_thr, Metric.CONTAINER_CPU_THROTTLED_RATIO)):
                    v = value(SeriesKey(metric.value, uid, cid), oldest)
                    if v is not None:
                        family.add_metric(labels, v)
                self._add_psi(ctr_psi, labels, Metric.CONTAINER_PSI.value, uid, cid, oldest)
                for field, metric in (("cycles", Metric.CONTAINER_CPU_CYCLES),
                                      ("instructions", Metric.CONTAINER_INSTRUCTIONS)):
                    v = value(SeriesKey(metric.value, uid, cid), oldest)
                    if v is not None:
                        ctr_cpi.add_metric(labels + [field], v)
        for family in (pod_cpu, pod_mem, pod_thr, pod_psi, ctr_cpu, ctr_mem, ctr_thr, ctr_psi, ctr_cpi):
            if family.samples:
                yield family

    def _add_psi(self, family: GaugeMetricFamily, base: list[str], metric: str, pod_uid: str,
                 container_id: str, oldest: float) -> None:
        cpu_full = self._value(SeriesKey(metric, pod_uid, container_id, LABELS[("cpu", "full", "avg10")]), oldest)
        if cpu_full is None and self._value(
                SeriesKey(metric, pod_uid, container_id, LABELS[("cpu", "some", "avg10")]), oldest) is None:
            return  # no PSI for this object
        supported = "false" if cpu_full is None else "true"
        for resource in PSI_RESOURCES:
            for kind in KINDS:
                for window in WINDOWS:
                    v = self._value(SeriesKey(metric, pod_uid, container_id, LABELS[(resource, kind, window)]), oldest)
                    if v is not None:
                        family.add_metric(base + [_PSI_RESOURCE_LABEL[resource], window, kind, supported], v)

    def _self_families(self) -> Iterator[PromMetric]:
        runs = CounterMetricFamily("koordlet_collector_runs", "Runs of each metrics collector",
                                   labels=["collector"])
        errors = CounterMetricFamily("koordlet_collector_errors", "Failed runs of each metrics collector",
                                     labels=["collector"])
        cpu = CounterMetricFamily("koordlet_collector_cpu_seconds", "CPU time spent in each collector",
                                  labels=["collector"])
        last = GaugeMetricFamily("koordlet_collector_last_run_duration_seconds",
                                 "Wall time of the last run of each collector", labels=["collector"])
        for name, stats in self._stats().items():
            runs.add_metric([name], stats.runs)
            errors.add_metric([name], stats.errors)
            cpu.add_metric([name], stats.total_cpu_seconds)
            last.add_metric([name], stats.last_wall_seconds)
        yield from (runs, errors, cpu, last)
