"""Prometheus exposition of the collected figures with koordlet's names and labels.

At each scrape the exporter walks the pods the states informer lists now and reads each
series' latest sample from the metric cache, so labels come only from live objects: a
deleted pod or stopped container disappears at the next scrape and no label set outlives
its object; a sample older than ``stale_after`` is left out.

It renders the text format itself (``render_parts()``, appended to /metrics by the HTTP
endpoint) instead of handing prometheus_client one Metric object per family: with 10,000
series prometheus_client's per-sample formatting dominates a scrape (bench/metrics_advisor.py
prints both). One walk over the pods serves both halves of /metrics (internal and
external). What does not change while a pod does not — its label strings, each family's
line prefix, the series keys, the request and limit lines — is made once per pod object
and kept by uid until the informer hands a different object (bench/metrics_scrape.py);
while it lists the same tuple of pods, the walk itself is kept flattened per family
(`_Layout`), and a family's values are read from the metric cache in one call.
An object's PSI lines are formatted again only when its readings differ from the last
scrape's (idle cgroups read 0.00 round after round).

Per-container usage, throttling and PSI are exported only with ``container_series``
(--metrics-container-series): at 1,000 pods they were most of /metrics, and the pod's
figures are what dashboards and alerts aggregate to anyway.

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
from koordlet.metrics.text import Family, escape, number, render_families
from koordlet.metricsadvisor.collectors.psi import PsiReading, PsiSnapshot
from koordlet.metricsadvisor.framework import CollectorStats
from koordlet.statesinformer.api import StatesInformer
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodInfo

DEFAULT_STALE_AFTER = 150.0  # > the CPI interval plus its window
_PSI_RESOURCE_LABEL = {"cpu": "cpu", "memory": "mem", "io": "io"}  # koordlet's spelling

# (name, help, metric) of every family, in output order
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
_POD_PSI = ("koordlet_pod_psi", "Pod psi collected by koordlet")
_CONTAINER_PSI = ("koordlet_container_psi", "Container psi collected by koordlet")
_CPI = ("koordlet_container_cpi", "Container cpi collected by koordlet")
_REQUESTS = ("koordlet_container_resource_requests", "Container resource requests")
_LIMITS = ("koordlet_container_resource_limits", "Container resource limits")


class AdvisorExporter:
    def __init__(self, cache: MetricCache, states: StatesInformer | None, node_name: str,
                 stats: Callable[[], dict[str, CollectorStats]] = dict,
                 clock: Callable[[], float] = time.time, stale_after: float = DEFAULT_STALE_AFTER,
                 psi: Callable[[], PsiSnapshot] = dict, container_series: bool = False,
                 psi_precisions: tuple[str, ...] = ("avg10",)) -> None:
        self._cache = cache
        self._states = states
        self._node_label = 'node="%s"' % escape(node_name)
        self._stats = stats
        self._clock = clock
        self._stale_after = stale_after
        self._psi = psi
        self._container_series = container_series
        self._psi_shape = _PsiShape(psi_precisions)
        self._latest_value = getattr(cache, "latest_value", None)  # MetricStore: no Sample objects
        self._latest_values = getattr(cache, "latest_values", None)  # MetricStore: one call per family
        self._layout = _Layout((), {})
        self._node_psi_lines = _PsiLines("koordlet_node_psi{" + self._node_label)

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
        return self.render_parts(openmetrics, True, False)

    def render_external(self, openmetrics: bool = False) -> bytes:
        """What koordlet serves on /external-metrics: PSI, CPI and the containers' requests
        and limits."""
        return self.render_parts(openmetrics, False, True)

    def render_parts(self, openmetrics: bool, internal: bool, external: bool) -> bytes:
        """The internal and/or external families, the pods walked once for both."""
        oldest = self._clock() - self._stale_after
        families = self._node_families(oldest) if internal else []
        if external:
            families.append(self._node_psi())
        if self._states is not None:
            families.extend(self._pod_families(oldest, internal, external))
        if internal:
            families.extend(self._self_families())
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
        self._node_psi_lines.add(psi.lines, self._psi().get(("", "")), self._psi_shape)
        return psi

    def _pod_families(self, oldest: float, internal: bool, external: bool) -> list[Family]:
        layout = self._layout_now()
        out: list[Family] = []
        if internal:
            out += [self._values_family(name, help_text, series, oldest)
                    for (name, help_text, _), series in zip(_POD_FAMILIES, layout.pod_usage)]
            if self._container_series:
                out += [self._values_family(name, help_text, series, oldest)
                        for (name, help_text, _), series in zip(_CONTAINER_FAMILIES, layout.ctr_usage())]
        if external:
            pod_psi, ctr_psi = Family(*_POD_PSI), Family(*_CONTAINER_PSI)
            psi_snapshot, shape = self._psi(), self._psi_shape
            if psi_snapshot:
                for psi_lines, ident in layout.pod_psi:
                    psi_lines.add(pod_psi.lines, psi_snapshot.get(ident), shape)
                if self._container_series:
                    for psi_lines, ident in layout.ctr_psi():
                        psi_lines.add(ctr_psi.lines, psi_snapshot.get(ident), shape)
            # CPI is off by default: 2 lookups per container for nothing otherwise
            cpi = self._values_family(*_CPI, layout.cpi(), oldest) if self._cache.keys(_CPI_FIELDS[0][1]) \
                else Family(*_CPI)
            requests, limits = Family(*_REQUESTS), Family(*_LIMITS)
            requests.lines, limits.lines = list(layout.requests), list(layout.limits)
            out += [pod_psi, ctr_psi, cpi, requests, limits]
        return out

    def _layout_now(self) -> _Layout:
        """The layout of the pods the informer lists now: the last one while it hands back the
        same tuple; otherwise made again, keeping the rows of the pod objects still listed."""
        assert self._states is not None
        pods = self._states.pods()
        layout = self._layout
        if layout.pods is not pods:
            kept = layout.rows
            rows = {}
            for pod in pods:
                row = kept.get(pod.uid)
                rows[pod.uid] = row if row is not None and row.pod is pod else _PodRows(pod, self._node_label)
            layout = self._layout = _Layout(pods, rows)  # pods gone since the last scrape drop out here
        return layout

    def _values_family(self, name: str, help_text: str, series: _FamilySeries, oldest: float) -> Family:
        """One family's lines: each series' newest value, when fresh, after its line's start."""
        family = Family(name, help_text)
        keys, prefixes = series
        values = self._latest_values(keys, oldest) if self._latest_values is not None else \
            [self._value(key, oldest) for key in keys]
        family.lines = [prefix + number(value) + "\n" for prefix, value in zip(prefixes, values) if value is not None]
        return family

    def _sample_value(self, key: SeriesKey) -> tuple[float, float] | None:
        sample = self._cache.latest(key)
        return None if sample is None else (sample.timestamp, sample.value)

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


# A series to read and the start of its line ("name{labels} "), made once per pod object
_Series = tuple[SeriesKey, str]


class _ContainerRows:
    """A running container's label text and its request and limit lines. Its usage, CPI and
    PSI series are made only when asked for (the container series are off by default, CPI
    too): kept for every container, they were ~1.5 KB a container a scrape never used."""

    __slots__ = ("uid", "id", "labels", "psi", "requests", "limits")

    def __init__(self, pod: PodInfo, container: ContainerInfo, node: str, pod_part: str) -> None:
        ids = 'container_id="%s",container_name="%s",%s' % (escape(container.id), escape(container.name), pod_part)
        self.uid, self.id = pod.uid, container.id
        self.labels = "%s,%s" % (node, ids)
        self.psi: _PsiLines | None = None
        spec = container.spec
        self.requests = _resource_lines(_REQUESTS[0], node, ids, spec.requests) if spec is not None else ()
        self.limits = _resource_lines(_LIMITS[0], node, ids, spec.limits) if spec is not None else ()

    def usage(self) -> tuple[_Series, ...]:
        return tuple((SeriesKey(metric.value, self.uid, self.id), "%s{%s} " % (name, self.labels))
                     for name, _, metric in _CONTAINER_FAMILIES)

    def cpi(self) -> tuple[_Series, ...]:
        return tuple((SeriesKey(metric.value, self.uid, self.id), '%s{%s,cpi_field="%s"} ' % (_CPI[0], self.labels, field))
                     for field, metric in _CPI_FIELDS)

    def psi_lines(self) -> _PsiLines:
        if self.psi is None:
            self.psi = _PsiLines("%s{%s" % (_CONTAINER_PSI[0], self.labels))
        return self.psi


class _PodRows:
    __slots__ = ("pod", "usage", "psi", "containers")

    def __init__(self, pod: PodInfo, node: str) -> None:
        pod_part = 'pod_uid="%s",pod_name="%s",pod_namespace="%s"' % (
            escape(pod.uid), escape(pod.name), escape(pod.namespace))
        labels = "%s,%s" % (node, pod_part)
        self.pod = pod  # the informer replaces the object when the pod changes: identity says "still valid"
        self.usage = tuple((SeriesKey(metric.value, pod.uid), "%s{%s} " % (name, labels))
                           for name, _, metric in _POD_FAMILIES)
        self.psi = _PsiLines("%s{%s" % (_POD_PSI[0], labels))
        self.containers = tuple(_ContainerRows(pod, c, node, pod_part) for c in pod.containers
                                if c.state is ContainerState.RUNNING)


# One family's series in line order: their keys, and the start of each one's line
_FamilySeries = tuple[list[SeriesKey], list[str]]


def _family_series(series: "list[tuple[_Series, ...]]", index: int) -> _FamilySeries:
    return [s[index][0] for s in series], [s[index][1] for s in series]


class _Layout:
    """What a scrape walks for one listing of pods, flattened per family in line order: the
    series to read, the PSI line makers and their objects, the request and limit lines.
    The containers' usage, CPI and PSI parts are made at their first use."""

    __slots__ = ("pods", "rows", "containers", "pod_usage", "pod_psi", "requests", "limits", "_ctr_usage", "_cpi",
                 "_ctr_psi")

    def __init__(self, pods: tuple[PodInfo, ...], rows: dict[str, _PodRows]) -> None:
        self.pods = pods
        self.rows = rows
        listed = list(rows.values())
        self.containers = [ctr for row in listed for ctr in row.containers]
        self.pod_usage = [_family_series([row.usage for row in listed], i) for i in range(len(_POD_FAMILIES))]
        self.pod_psi = [(row.psi, (row.pod.uid, "")) for row in listed]
        self.requests = [line for ctr in self.containers for line in ctr.requests]
        self.limits = [line for ctr in self.containers for line in ctr.limits]
        self._ctr_usage: list[_FamilySeries] | None = None
        self._cpi: _FamilySeries | None = None
        self._ctr_psi: list[tuple[_PsiLines, tuple[str, str]]] | None = None

    def ctr_usage(self) -> list[_FamilySeries]:
        if self._ctr_usage is None:
            usage = [ctr.usage() for ctr in self.containers]
            self._ctr_usage = [_family_series(usage, i) for i in range(len(_CONTAINER_FAMILIES))]
        return self._ctr_usage

    def cpi(self) -> _FamilySeries:
        if self._cpi is None:
            cpi = [one for ctr in self.containers for one in ctr.cpi()]  # both fields of a container, one family
            self._cpi = ([key for key, _ in cpi], [prefix for _, prefix in cpi])
        return self._cpi

    def ctr_psi(self) -> list[tuple[_PsiLines, tuple[str, str]]]:
        if self._ctr_psi is None:
            self._ctr_psi = [(ctr.psi_lines(), (ctr.uid, ctr.id)) for ctr in self.containers]
        return self._ctr_psi


# koordlet's units: cpu in cores, memory-like in bytes, the rest (batch-cpu milli-cores) as integers
_UNIT = {"cpu": ("core", 0.001), "memory": ("byte", 1.0), BATCH_MEMORY: ("byte", 1.0)}


def _resource_lines(name: str, node: str, ids: str, quantities: Mapping[str, int]) -> tuple[str, ...]:
    lines = []
    for resource in sorted(quantities):
        unit, scale = _UNIT.get(resource, ("integer", 1.0))
        lines.append('%s{%s,resource="%s",unit="%s",%s} %s\n' % (
            name, node, escape(resource), unit, ids, number(quantities[resource] * scale)))
    return tuple(lines)


# PSI lines of one object, one (resource, degree, cpu_full_supported) at a time: the
# object's line start and the averages asked for filled into one template shared by every
# object, with %r — the kernel prints finite numbers, so repr is the text format's spelling
# and no per-value check is needed
_PRECISIONS = ("avg10", "avg60", "avg300")  # the order of a PsiAverages tuple


class _PsiShape:
    """Which averages are exported, and each (resource, degree, supported)'s template."""

    __slots__ = ("precisions", "indices", "templates")

    def __init__(self, precisions: tuple[str, ...]) -> None:
        self.precisions = tuple(p for p in _PRECISIONS if p in precisions)
        self.indices = tuple(_PRECISIONS.index(p) for p in self.precisions)
        self.templates: dict[tuple[str, str, str], str] = {}

    def lines(self, prefix: str, resource: str, degree: str, supported: str, averages: tuple[float, ...]) -> str:
        """The object's lines of one resource and degree, one per average asked for."""
        key = (resource, degree, supported)
        template = self.templates.get(key)
        if template is None:
            template = self.templates[key] = "".join(
                '%%s,psi_resource_type="%s",psi_precision="%s",psi_degree="%s",cpu_full_supported="%s"} %%r\n' % (
                    _PSI_RESOURCE_LABEL[resource], precision, degree, supported)
                for precision in self.precisions)
        if len(self.indices) == 1:  # the default, avg10 alone
            return template % (prefix, averages[self.indices[0]])
        return template % tuple(part for i in self.indices for part in (prefix, averages[i]))


class _PsiLines:
    """One object's PSI lines: koordlet's records, some (and full where the kernel has it) x
    the averages asked for. They are made again only when the object's readings changed
    since the last scrape: an idle cgroup's averages stay at 0.00 round after round."""

    __slots__ = ("prefix", "readings", "lines")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.readings: Mapping[str, PsiReading] | None = None
        self.lines: list[str] = []

    def add(self, out: list[str], readings: Mapping[str, PsiReading] | None, shape: _PsiShape) -> None:
        if not readings:
            return
        if readings != self.readings:  # the shape is the exporter's, fixed: the readings decide
            self.readings, self.lines = dict(readings), self._render(readings, shape)
        out += self.lines

    def _render(self, readings: Mapping[str, PsiReading], shape: _PsiShape) -> list[str]:
        cpu = readings.get("cpu")
        supported = "true" if cpu is not None and cpu[1] is not None else "false"
        lines = []
        for resource, (some, full) in readings.items():
            for degree, averages in (("some", some), ("full", full)):
                if averages is not None:
                    lines.append(shape.lines(self.prefix, resource, degree, supported, averages))
        return lines
