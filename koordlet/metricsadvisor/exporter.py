"""Prometheus exposition of the collected figures with koordlet's names and labels.

At each scrape the exporter walks the pods the states informer lists now and reads each
series' latest sample from the metric cache, so labels come only from live objects: a
deleted pod or stopped container disappears at the next scrape and no label set outlives
its object; a sample older than ``stale_after`` is left out.

It renders the text format itself (``render_parts()``, appended to /metrics by the HTTP
endpoint) instead of handing prometheus_client one Metric object per family: with 10,000
series prometheus_client's per-sample formatting dominates a scrape (bench/metrics_advisor.py
prints both). One walk over the pods serves both halves of /metrics (internal and
external). What does not change while a pod does not — its label string (one, shared by
its families), the series keys, the request and limit lines (kept once, in one encoded
block per family) — is made once per pod object and kept by uid until the informer hands
a different object; containers' rows are made only when container series or CPI are on
(bench/metrics_scrape.py prints what the exporter holds).
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

import itertools
import time
from array import array
from typing import Callable, Iterator, Mapping, Sequence

from koordlet.apis.keys import BATCH_MEMORY
from koordlet.metriccache.api import Metric, MetricCache, SeriesKey
from koordlet.metrics.text import Family, escape, family_parts, number
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
        self._rows: dict[str, _PodRows] = {}
        self._layout = _Layout([])
        self._node_psi_lines = _PsiLines("koordlet_node_psi", self._node_label)

    def render(self, openmetrics: bool = False) -> bytes:
        """The agent's own figures (usage, throttling, collectors): /internal-metrics."""
        return b"".join(self.render_parts(openmetrics, True, False))

    def render_external(self, openmetrics: bool = False) -> bytes:
        """What koordlet serves on /external-metrics: PSI, CPI and the containers' requests
        and limits."""
        return b"".join(self.render_parts(openmetrics, False, True))

    def render_parts(self, openmetrics: bool, internal: bool, external: bool) -> list[bytes]:
        """The internal and/or external families, the pods walked once for both and their
        series read in one call to the cache per tuple of keys the layout keeps (the cache
        looks a kept tuple's series up once while no series comes or goes: at 1,000 pods a
        list's lookups were 2.2 of the read's 3.4 ms); the body in pieces (text.family_parts)."""
        oldest = self._clock() - self._stale_after
        layout = self._walk_pods() if self._states is not None else None
        node_series = self._node_series() if internal else []
        reads: list[Sequence[SeriesKey]] = [[key for key, _ in node_series]]
        # CPI is off by default: 2 reads per container for nothing otherwise
        want_cpi = external and layout is not None and bool(self._cache.keys(_CPI_FIELDS[0][1]))
        if layout is not None:
            if internal:
                reads.append(layout.pod_keys)
                if self._container_series:
                    reads.append(layout.ctr_series()[0])
            if want_cpi:
                reads.append(layout.cpi_series()[0])
        values = itertools.chain.from_iterable([self._cache.latest_values(keys, oldest) for keys in reads])
        families = self._node_families(node_series, values) if internal else []
        if external:
            families.append(self._node_psi())
        if layout is not None:
            families.extend(self._pod_families(layout, values, internal, external, want_cpi))
        if internal:
            families.extend(self._self_families())
        return family_parts(families, openmetrics)

    def _node_series(self) -> list[tuple[SeriesKey, str]]:
        """(key, labels) of the node families' series, in their order."""
        series = [(SeriesKey(metric.value), self._node_label) for _, _, metric in _NODE_FAMILIES]
        for _, _, metric in _NETWORK_FAMILIES:
            for key in sorted(self._cache.keys(metric), key=lambda k: k.labels):
                labels = dict(key.labels)
                series.append((key, '%s,interface="%s",direction="%s"' % (
                    self._node_label, escape(labels.get("interface", "")), escape(labels.get("direction", "")))))
        return series

    def _node_families(self, series: list[tuple[SeriesKey, str]], values: Iterator[float | None]) -> list[Family]:
        out = []
        for name, help_text, metric in _NODE_FAMILIES + _NETWORK_FAMILIES:
            family = Family(name, help_text)
            for key, labels in series:
                if key.metric == metric.value:
                    value = next(values)
                    if value is not None:
                        family.add(labels, value)
            out.append(family)
        return out

    def _node_psi(self) -> Family:
        psi = Family("koordlet_node_psi", "Node psi collected by koordlet")
        self._node_psi_lines.add(psi.blocks, self._psi().get(("", "")), self._psi_shape)
        return psi

    def _walk_pods(self) -> _Layout:
        """The rows of the pods the informer lists now; the layout of the last scrape when
        they are the same objects (a pod that changed is a new object)."""
        assert self._states is not None
        pods = self._states.pods()
        layout = self._layout
        if pods is layout.pods:  # the informer's same snapshot: the same objects
            return layout
        kept, rows = self._rows, {}
        node = self._node_label
        for pod in pods:
            row = kept.get(pod.uid)
            if row is None or row.pod is not pod:
                row = _PodRows(pod, node, self._cache.shared_key)
            rows[pod.uid] = row
        self._rows = rows  # pods gone since the last scrape drop out here
        ordered = list(rows.values())
        if ordered != layout.rows:  # compared by identity: _PodRows has no __eq__
            layout = _Layout(ordered, layout)
        layout.pods = pods
        self._layout = layout
        return layout

    def _pod_families(self, layout: _Layout, values: Iterator[float | None], internal: bool, external: bool,
                      want_cpi: bool) -> list[Family]:
        out = []
        if internal:
            out += _value_families(_POD_FAMILIES, layout.pod_labels, values)
            if self._container_series:
                out += _value_families(_CONTAINER_FAMILIES, layout.ctr_series()[1], values)
        if external:
            pod_psi, ctr_psi, cpi = Family(*_POD_PSI), Family(*_CONTAINER_PSI), Family(*_CPI)
            psi_snapshot = self._psi()
            if psi_snapshot:
                shape = self._psi_shape
                for row in layout.rows:
                    row.psi.add(pod_psi.blocks, psi_snapshot.get((row.pod.uid, "")), shape)
                if self._container_series:
                    for row in layout.rows:
                        for ctr in row.containers():
                            ctr.psi().add(ctr_psi.blocks, psi_snapshot.get((row.pod.uid, ctr.id)), shape)
            if want_cpi:
                cpi.lines = _value_lines(_CPI[0], layout.cpi_series()[1], values)  # both fields in one family
            requests, limits = Family(*_REQUESTS), Family(*_LIMITS)
            requests.blocks = [layout.requests] if layout.requests else []
            limits.blocks = [layout.limits] if layout.limits else []
            out += [pod_psi, ctr_psi, cpi, requests, limits]
        return out

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


class _ContainerRows:
    """A running container's labels; its usage and CPI series are made at first use: at the
    default level neither is exported (container series off, CPI off), and at 1,000 pods
    they held 3.7 MiB for nothing."""

    __slots__ = ("uid", "id", "labels", "_usage", "_cpi", "_psi")

    def __init__(self, uid: str, container: ContainerInfo, node: str, pod_part: str) -> None:
        self.uid, self.id = uid, container.id
        self.labels = '%s,container_id="%s",container_name="%s",%s' % (
            node, escape(container.id), escape(container.name), pod_part)
        self._usage: tuple[SeriesKey, ...] | None = None
        self._cpi: tuple[tuple[SeriesKey, str], ...] | None = None
        self._psi: _PsiLines | None = None

    def usage(self) -> tuple[SeriesKey, ...]:
        if self._usage is None:
            self._usage = tuple(SeriesKey(metric.value, self.uid, self.id) for _, _, metric in _CONTAINER_FAMILIES)
        return self._usage

    def cpi(self) -> tuple[tuple[SeriesKey, str], ...]:
        """(key, labels) of each CPI field."""
        if self._cpi is None:
            self._cpi = tuple((SeriesKey(metric.value, self.uid, self.id), '%s,cpi_field="%s"' % (self.labels, field))
                              for field, metric in _CPI_FIELDS)
        return self._cpi

    def psi(self) -> _PsiLines:
        if self._psi is None:
            self._psi = _PsiLines(_CONTAINER_PSI[0], self.labels)
        return self._psi


class _PodRows:
    __slots__ = ("pod", "node", "labels", "usage", "psi", "_containers")

    def __init__(self, pod: PodInfo, node: str, share: Callable[[SeriesKey], SeriesKey]) -> None:
        self.pod = pod  # the informer replaces the object when the pod changes: identity says "still valid"
        self.node = node
        # one label string for every family of the pod (usage lines and PSI), not a line start each
        self.labels = "%s,%s" % (node, _pod_part(pod))
        self.usage = tuple(share(SeriesKey(metric.value, pod.uid)) for _, _, metric in _POD_FAMILIES)
        self.psi = _PsiLines(_POD_PSI[0], self.labels)
        self._containers: tuple[_ContainerRows, ...] | None = None

    def containers(self) -> tuple[_ContainerRows, ...]:
        """The running containers' rows, made at first use (container series or CPI)."""
        if self._containers is None:
            pod_part = _pod_part(self.pod)
            self._containers = tuple(_ContainerRows(self.pod.uid, c, self.node, pod_part)
                                     for c in self.pod.containers if c.state is ContainerState.RUNNING)
        return self._containers

    def resource_block(self, which: int) -> bytes:
        """The request (0) or limit (1) lines of the running containers, encoded."""
        pod, name = self.pod, (_REQUESTS, _LIMITS)[which][0]
        pod_part, lines = _pod_part(pod), list[str]()
        for c in pod.containers:
            if c.state is ContainerState.RUNNING and c.spec is not None:
                ids = 'container_id="%s",container_name="%s",%s' % (escape(c.id), escape(c.name), pod_part)
                lines += _resource_lines(name, self.node, ids, (c.spec.requests, c.spec.limits)[which])
        return "".join(lines).encode()


def _pod_part(pod: PodInfo) -> str:
    return 'pod_uid="%s",pod_name="%s",pod_namespace="%s"' % (
        escape(pod.uid), escape(pod.name), escape(pod.namespace))


class _Layout:
    """One list of pod rows as a scrape reads and renders it: the pods' series of each value
    family in line order (family by family), the containers' at first use, and the request
    and limit lines in one block each, which change only with the objects. Made again only
    when the informer lists other objects; the rows kept from the last layout bring their
    lines as slices of its blocks (the lines are kept once, in the blocks)."""

    __slots__ = ("rows", "pods", "pod_keys", "pod_labels", "_ctr", "_cpi", "requests", "limits", "_ends")

    def __init__(self, rows: list[_PodRows], last: _Layout | None = None) -> None:
        self.rows = rows
        # the informer's pods() these rows were made from, while it hands the same tuple
        # (its snapshot until a pod changes): a scrape then walks no pod
        self.pods: Sequence[PodInfo] | None = None
        self.pod_keys = _by_family([row.usage for row in rows])
        self.pod_labels = [row.labels for row in rows]
        self._ctr: tuple[tuple[SeriesKey, ...], list[str]] | None = None
        self._cpi: tuple[tuple[SeriesKey, ...], list[str]] | None = None
        at = {id(row): k for k, row in enumerate(last.rows)} if last is not None else {}
        blocks: list[bytes] = []
        ends: list[array[int]] = []
        for which in (0, 1):
            old = memoryview((last.requests, last.limits)[which]) if last is not None else memoryview(b"")
            old_ends = last._ends[which] if last is not None else array("q")
            pieces: list[bytes | memoryview] = []
            for row in rows:
                k = at.get(id(row))
                pieces.append(row.resource_block(which) if k is None else old[old_ends[k - 1] if k else 0:old_ends[k]])
            # one block each, encoded: the scrape's join copies it, not 2,000 lines
            blocks.append(b"".join(pieces))
            ends.append(array("q", itertools.accumulate(map(len, pieces))))
        self.requests: bytes = blocks[0]
        self.limits: bytes = blocks[1]
        self._ends: list[array[int]] = ends  # each row's end in each block

    def ctr_series(self) -> tuple[tuple[SeriesKey, ...], list[str]]:
        """The containers' usage keys (family by family) and labels."""
        if self._ctr is None:
            ctrs = [ctr for row in self.rows for ctr in row.containers()]
            self._ctr = _by_family([ctr.usage() for ctr in ctrs]), [ctr.labels for ctr in ctrs]
        return self._ctr

    def cpi_series(self) -> tuple[tuple[SeriesKey, ...], list[str]]:
        if self._cpi is None:
            cpi = [series for row in self.rows for ctr in row.containers() for series in ctr.cpi()]
            self._cpi = tuple([key for key, _ in cpi]), [labels for _, labels in cpi]
        return self._cpi


def _by_family(objects: list[tuple[SeriesKey, ...]]) -> tuple[SeriesKey, ...]:
    """Every object's key of family 0, then of family 1...: one read for them all (a tuple:
    kept by the layout, its series are looked up once, see render_parts)."""
    return tuple([keys[f] for f in range(len(objects[0]) if objects else 0) for keys in objects])


def _value_families(families: tuple[tuple[str, str, Metric], ...], labels: list[str],
                    values: Iterator[float | None]) -> list[Family]:
    out = []
    for name, help_text, _ in families:
        family = Family(name, help_text)
        family.lines = _value_lines(name, labels, values)
        out.append(family)
    return out


def _value_lines(name: str, labels: list[str], values: Iterator[float | None]) -> list[str]:
    """A line per label set whose value (the next from `values`) is fresh. The cache's values
    are floats: repr spells a finite one as the text format does."""
    return [f"{name}{{{series}}} {value!r}\n" if value - value == 0.0 else "%s{%s} %s\n" % (name, series, number(value))
            for series, value in zip(labels, values) if value is not None]


# koordlet's units: cpu in cores, memory-like in bytes, the rest (batch-cpu milli-cores) as integers
_UNIT = {"cpu": ("core", 0.001), "memory": ("byte", 1.0), BATCH_MEMORY: ("byte", 1.0)}


def _resource_lines(name: str, node: str, ids: str, quantities: Mapping[str, int]) -> tuple[str, ...]:
    lines = []
    for resource in sorted(quantities):
        unit, scale = _UNIT.get(resource, ("integer", 1.0))
        lines.append('%s{%s,resource="%s",unit="%s",%s} %s\n' % (
            name, node, escape(resource), unit, ids, number(quantities[resource] * scale)))
    return tuple(lines)


# PSI lines of one object in one % call: the object's label string and the averages asked
# for filled into one template of all its lines, which the exporter shares by all objects of
# the same resources. An average is spelled by repr — the kernel prints finite numbers, so
# that is the text format's spelling and no per-value check is needed — kept per value:
# the kernel prints two decimals from 0 to 100, a few thousand values at most, and a repr
# was half of a busy object's render
_AVERAGE_TEXTS: dict[float, str] = {}
_AVERAGE_TEXTS_KEPT = 20_000  # forgotten all at once beyond this (a kernel printing more decimals)


def _average_text(value: float) -> str:
    if len(_AVERAGE_TEXTS) >= _AVERAGE_TEXTS_KEPT:
        _AVERAGE_TEXTS.clear()
    text = _AVERAGE_TEXTS[value] = repr(value)
    return text

_PRECISIONS = ("avg10", "avg60", "avg300")  # the order of a PsiAverages tuple


class _PsiShape:
    """Which averages are exported, and the line templates of each object's lines:
    "%s" for the object's labels and for an average's text."""

    __slots__ = ("precisions", "indices", "whole_templates")

    def __init__(self, precisions: tuple[str, ...]) -> None:
        self.precisions = tuple(p for p in _PRECISIONS if p in precisions)
        self.indices = tuple(_PRECISIONS.index(p) for p in self.precisions)
        # all the lines of one object, by (family, resources, which have "full", supported)
        self.whole_templates: dict[tuple[str, tuple[str, ...], tuple[bool, ...], str], str] = {}

    def template(self, name: str, resource: str, degree: str, supported: str) -> str:
        """The lines of one (resource, degree), one per average asked for."""
        return "".join(
            '%s{%%s,psi_resource_type="%s",psi_precision="%s",psi_degree="%s",cpu_full_supported="%s"} %%s\n' % (
                name, _PSI_RESOURCE_LABEL[resource], precision, degree, supported)
            for precision in self.precisions)

    def whole_template(self, name: str, resources: tuple[str, ...], has_full: tuple[bool, ...],
                       supported: str) -> str:
        """The templates of every line of one object, resource after resource, some before full."""
        key = (name, resources, has_full, supported)
        template = self.whole_templates.get(key)
        if template is None:
            template = self.whole_templates[key] = "".join(
                self.template(name, resource, degree, supported)
                for resource, full in zip(resources, has_full) for degree in (("some", "full") if full else ("some",)))
        return template


class _PsiLines:
    """One object's PSI lines: koordlet's records, some (and full where the kernel has it) x
    the averages asked for. They are made again only when the object's readings changed
    since the last scrape: an idle cgroup's averages stay at 0.00 round after round."""

    __slots__ = ("name", "labels", "kept")

    def __init__(self, name: str, labels: str) -> None:
        self.name, self.labels = name, labels  # the object's label string, shared with its other families
        # the last readings and their lines encoded in one block (one item of the scrape's
        # join, not 6 to 18); one attribute, so that two scrapes at once (each in a worker
        # thread) cannot leave one's readings beside the other's lines
        self.kept: tuple[Mapping[str, PsiReading] | None, bytes] = (None, b"")

    def add(self, out: list[bytes], readings: Mapping[str, PsiReading] | None, shape: _PsiShape) -> None:
        if not readings:
            return
        last, text = self.kept
        if readings != last:  # the shape is the exporter's, fixed: the readings decide
            text = self._render(readings, shape).encode()
            self.kept = (dict(readings), text)
        if text:
            out.append(text)

    def _render(self, readings: Mapping[str, PsiReading], shape: _PsiShape) -> str:
        cpu = readings.get("cpu")
        supported = "true" if cpu is not None and cpu[1] is not None else "false"
        layout = tuple([full is not None for _, full in readings.values()])
        template = shape.whole_template(self.name, tuple(readings), layout, supported)
        labels, indices, text_of = self.labels, shape.indices, _AVERAGE_TEXTS.get
        # every line's (labels, average) in the template's order: one % for all of them
        return template % tuple([x for some, full in readings.values() for averages in (some, full)
                                 if averages is not None for i in indices
                                 for x in (labels, text_of(averages[i]) or _average_text(averages[i]))])
