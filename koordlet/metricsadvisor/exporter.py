"""Prometheus exposition of the collected figures with koordlet's names and labels.

At each scrape the exporter walks the pods the states informer lists now and reads each
series' latest sample from the metric cache, so labels come only from live objects: a
deleted pod or stopped container disappears at the next scrape and no label set outlives
its object; a sample older than ``stale_after`` is left out.

It renders the text format itself (``render()``, appended to /metrics by the HTTP
endpoint) instead of handing prometheus_client one Metric object per family: with 10,000
series prometheus_client's per-sample formatting dominates a scrape (bench/metrics_advisor.py
prints both). Each object's label string is built once per scrape and shared by its lines.

Names (anchors.md section 2.4): koordlet_container_cpi{cpi_field}, koordlet_container_psi
and koordlet_pod_psi {psi_resource_type (cpu/mem/io), psi_precision, psi_degree,
cpu_full_supported}, koordlet_node_used_cpu_cores / _memory_bytes (koordlet HEAD). koordlet
has no per-pod usage gauges; ours follow its style: koordlet_{pod,container}_used_*.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping

from koordlet.apis.keys import BATCH_MEMORY
from koordlet.metriccache.api import Metric, MetricCache, SeriesKey
from koordlet.metrics.text import Family, escape, render_families
from koordlet.metricsadvisor.collectors.psi import PsiReading, PsiSnapshot
from koordlet.metricsadvisor.framework import CollectorStats
from koordlet.statesinformer.api import StatesInformer
from koordlet.statesinformer.model import PodInfo

DEFAULT_STALE_AFTER = 150.0  # > the CPI interval plus its window
_PSI_RESOURCE_LABEL = {"cpu": "cpu", "memory": "mem", "io": "io"}  # koordlet's spelling

# (name, help) of every family, in output order
_NODE_FAMILIES = (
    ("koordlet_node_used_cpu_cores", "Number of cpu cores used by node in realtime", Metric.NODE_CPU_USAGE_CORES),
    ("koordlet_node_used_memory_bytes", "Memory used by node in realtime", Metric.NODE_MEMORY_USAGE_BYTES),
    ("koordlet_be_used_cpu_cores", "Number of cpu cores used by the best-effort tier", Metric.BE_CPU_USAGE_CORES),
    ("koordlet_be_cpu_limit_cores", "Real CPU limit of the best-effort tier in cores", Metric.BE_CPU_LIMIT_CORES),
)
_POD_FAMILIES = (
    ("koordlet_pod_used_cpu_cores", "Number of cpu cores used by pod", Metric.POD_CPU_USAGE_CORES),
    ("koordlet_pod_used_memory_bytes", "Memory working set of pod", Metric.POD_MEMORY_USAGE_BYTES),
    ("koordlet_pod_cpu_throttled_ratio", "Throttled CFS periods over periods of pod", Metric.POD_CPU_THROTTLED_RATIO),
)
_CONTAINER_FAMILIES = (
    ("koordlet_container_used_cpu_cores", "Number of cpu cores used by container", Metric.CONTAINER_CPU_USAGE_CORES),
    ("koordlet_container_used_memory_bytes", "Memory working set of container", Metric.CONTAINER_MEMORY_USAGE_BYTES),
    ("koordlet_container_cpu_throttled_ratio", "Throttled CFS periods over periods of container",
     Metric.CONTAINER_CPU_THROTTLED_RATIO),
)
_NETWORK_FAMILIES = (
    ("koordlet_node_network_bytes_per_second", "Bytes per second through a device-backed interface",
     Metric.NODE_NETWORK_BYTES_PER_SECOND),
    ("koordlet_node_network_packets_per_second", "Packets per second through a device-backed interface",
     Metric.NODE_NETWORK_PACKETS_PER_SECOND),
    ("koordlet_node_network_errors_per_second", "Errors per second on a device-backed interface",
     Metric.NODE_NETWORK_ERRORS_PER_SECOND),
)
_CPI_FIELDS = (("cycles", Metric.CONTAINER_CPU_CYCLES), ("instructions", Metric.CONTAINER_INSTRUCTIONS))


class AdvisorExporter:
    def __init__(self, cache: MetricCache, states: StatesInformer | None, node_name: str,
                 stats: Callable[[], dict[str, CollectorStats]] = dict,
                 clock: Callable[[], float] = time.time, stale_after: float = DEFAULT_STALE_AFTER,
                 psi: Callable[[], PsiSnapshot] = dict) -> None:
        self._cache = cache
        self._states = states
        self._node_label = 'node="%s"' % escape(node_name)
        self._stats = stats
        self._clock = clock
        self._stale_after = stale_after
        self._psi = psi
        self._latest_value = getattr(cache, "latest_value", None)  # MetricStore: no Sample objects

    def _value(self, key: SeriesKey, oldest: float) -> float | None:
        if self._latest_value is not None:
            last = self._latest_value(key)
            return None if last is None or last[0] < oldest else last[1]
        sample = self._cache.latest(key)
        if sample is None or sample.timestamp < oldest:
            return None
        return sample.value

    def render(self, openmetrics: bool = False) -> bytes:
        """The agent's own figures (usage, throttling, collectors): /internal-metrics."""
        oldest = self._clock() - self._stale_after
        families = self._node_families(oldest)
        if self._states is not None:
            families.extend(self._object_families(oldest))
        families.extend(self._self_families())
        return render_families(families, openmetrics)

    def render_external(self, openmetrics: bool = False) -> bytes:
        """What koordlet serves on /external-metrics: PSI, CPI and the containers' requests
        and limits."""
        oldest = self._clock() - self._stale_after
        families = [self._node_psi()]
        if self._states is not None:
            families.extend(self._interference_families(oldest))
        return render_families(families, openmetrics)

    def _node_families(self, oldest: float) -> list[Family]:
        out = []
        for name, help_text, metric in _NODE_FAMILIES:
            family = Family(name, help_text)
            value = self._value(SeriesKey(metric.value), oldest)
            if value is not None:
                family.add(self._node_label, value)
            out.append(family)
        for name, help_text, metric in _NETWORK_FAMILIES:
            family = Family(name, help_text)
            for key in sorted(self._cache.keys(metric), key=lambda k: k.labels):
                value = self._value(key, oldest)
                if value is not None:
                    labels = dict(key.labels)
                    family.add('%s,interface="%s",direction="%s"' % (
                        self._node_label, escape(labels.get("interface", "")), escape(labels.get("direction", ""))),
                        value)
            out.append(family)
        return out

    def _node_psi(self) -> Family:
        psi = Family("koordlet_node_psi", "Node psi collected by koordlet")
        _add_psi(psi, self._node_label, self._psi().get(("", "")))
        return psi

    def _object_families(self, oldest: float) -> list[Family]:
        assert self._states is not None
        pod_families = [(Family(name, help_text), metric.value) for name, help_text, metric in _POD_FAMILIES]
        ctr_families = [(Family(name, help_text), metric.value) for name, help_text, metric in _CONTAINER_FAMILIES]
        value, node = self._value, self._node_label
        for pod in self._states.pods():
            uid = pod.uid
            pod_part = _pod_labels(pod)
            labels = "%s,%s" % (node, pod_part)
            for family, metric in pod_families:
                v = value(SeriesKey(metric, uid), oldest)
                if v is not None:
                    family.add(labels, v)
            for container in pod.running_containers:
                labels = '%s,container_id="%s",container_name="%s",%s' % (
                    node, escape(container.id), escape(container.name), pod_part)
                for family, metric in ctr_families:
                    v = value(SeriesKey(metric, uid, container.id), oldest)
                    if v is not None:
                        family.add(labels, v)
        return [f for f, _ in pod_families] + [f for f, _ in ctr_families]

    def _interference_families(self, oldest: float) -> list[Family]:
        assert self._states is not None
        pod_psi = Family("koordlet_pod_psi", "Pod psi collected by koordlet")
        ctr_psi = Family("koordlet_container_psi", "Container psi collected by koordlet")
        cpi = Family("koordlet_container_cpi", "Container cpi collected by koordlet")
        requests = Family("koordlet_container_resource_requests", "Container resource requests")
        limits = Family("koordlet_container_resource_limits", "Container resource limits")
        value, node, psi_snapshot = self._value, self._node_label, self._psi()
        for pod in self._states.pods():
            uid = pod.uid
            pod_part = _pod_labels(pod)
            labels = "%s,%s" % (node, pod_part)
            _add_psi(pod_psi, labels, psi_snapshot.get((uid, "")))
            for container in pod.running_containers:
                cid = container.id
                labels = '%s,container_id="%s",container_name="%s",%s' % (
                    node, escape(cid), escape(container.name), pod_part)
                _add_psi(ctr_psi, labels, psi_snapshot.get((uid, cid)))
                for field, metric in _CPI_FIELDS:
                    v = value(SeriesKey(metric.value, uid, cid), oldest)
                    if v is not None:
                        cpi.add(labels, v, ',cpi_field="%s"' % field)
                if container.spec is not None:
                    ids = '%s,container_id="%s",container_name="%s"' % (pod_part, escape(cid), escape(container.name))
                    _add_resources(requests, node, ids, container.spec.requests)
                    _add_resources(limits, node, ids, container.spec.limits)
        return [pod_psi, ctr_psi, cpi, requests, limits]

    def _self_families(self) -> list[Family]:
        runs = Family("koordlet_collector_runs_total", "Runs of each metrics collector", "counter")
        errors = Family("koordlet_collector_errors_total", "Failed runs of each metrics collector", "counter")
        cpu = Family("koordlet_collector_cpu_seconds_total", "CPU time spent in each collector", "counter")
        last = Family("koordlet_collector_last_run_duration_seconds",
                       "Wall time of the last run of each collector")
        for name, stats in self._stats().items():
            labels = 'collector="%s"' % escape(name)
            runs.add(labels, stats.runs)
            errors.add(labels, stats.errors)
            cpu.add(labels, stats.total_cpu_seconds)
            last.add(labels, stats.last_wall_seconds)
        return [runs, errors, cpu, last]


def _pod_labels(pod: PodInfo) -> str:
    return 'pod_uid="%s",pod_name="%s",pod_namespace="%s"' % (escape(pod.uid), escape(pod.name), escape(pod.namespace))


# koordlet's units: cpu in cores, memory-like in bytes, the rest (batch-cpu milli-cores) as integers
_UNIT = {"cpu": ("core", 0.001), "memory": ("byte", 1.0), BATCH_MEMORY: ("byte", 1.0)}


def _add_resources(family: Family, node: str, ids: str, quantities: Mapping[str, int]) -> None:
    for resource in sorted(quantities):
        unit, scale = _UNIT.get(resource, ("integer", 1.0))
        family.add('%s,resource="%s",unit="%s",%s' % (node, escape(resource), unit, ids), quantities[resource] * scale)


def _add_psi(family: Family, labels: str, readings: Mapping[str, PsiReading] | None) -> None:
    """koordlet's PSI records: some (and full where the kernel has it) x avg10/60/300."""
    if not readings:
        return
    cpu = readings.get("cpu")
    supported = "true" if cpu is not None and cpu[1] is not None else "false"
    for resource, (some, full) in readings.items():
        name = _PSI_RESOURCE_LABEL[resource]
        for degree, averages in (("some", some), ("full", full)):
            if averages is None:
                continue
            for precision, v in zip(("avg10", "avg60", "avg300"), averages):
                family.add(labels, v, ',psi_resource_type="%s",psi_precision="%s",psi_degree="%s",'
                           'cpu_full_supported="%s"' % (name, precision, degree, supported))
