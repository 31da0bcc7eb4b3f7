"""The NodeMetric status, built from the metric cache and the pods the informer knows.

Two steps, both free of IO: `take_snapshot` reads the windows out of the metric cache
(an in-memory store) into plain numbers, `status_document` turns a snapshot into the
JSON the CRD expects. koordlet's rules (statesinformer/impl/states_nodemetric.go):

- nodeUsage, systemUsage and each pod's podUsage are the *average* over
  aggregateDurationSeconds; they need one sample, not a covered window.
- aggregatedNodeUsages holds p50/p90/p95/p99 per configured duration; a duration whose
  samples span less than half of it (the cold-start rule) is left out, never reported
  from a half-collected window.
- no node usage at all (nothing collected yet) means no report.
- podsMetric lists the pods that have usage, with their priority class and QoS class;
  a pod without an explicit priority class gets the one its QoS implies
  (apis/extension GetPodPriorityClassWithQoS: SYSTEM/LSE/LSR/LS -> koord-prod, BE -> koord-batch).
- prodReclaimableMetric is Koordinator's prod reclaimable prediction, computed over the
  cache's window instead of the predict server's day-long histogram: per Prod pod,
  request - p95(cpu) x 1.1 and request - p99(memory) x 1.1 (the predictor uses p98, which
  the cache does not keep), positive parts summed; a pod in cold start reclaims nothing.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from functools import partial
from json.encoder import encode_basestring_ascii
from typing import Any, Callable, Iterable, NamedTuple

from koordlet.apis.qos import KoordQoSClass, PriorityBand
from koordlet.metriccache.aggregation import COLD_START_RATIO, P95, P99, covers_window
from koordlet.metriccache.api import Aggregate, Mean, Metric, MetricCache, NotEnoughData, SeriesKey, WindowSpan
from koordlet.reporter.policy import MetricCollectPolicy
from koordlet.reporter.quantities import (
    cpu_quantity_from_milli,
    go_duration,
    memory_quantity,
    memory_quantity_from_bytes,
)
from koordlet.statesinformer.model import PodInfo
from koordlet.statesinformer.pod_memo import PodMemo
from koordlet.util.json_text import canonical_json, with_last_member
from koordlet.util.steps import PODS_PER_STEP, Steps, run_steps

PERCENTILES = ("p50", "p90", "p95", "p99")
PROD_RECLAIM_SAFETY_MARGIN_PERCENT = 10
_MARGIN = (100 + PROD_RECLAIM_SAFETY_MARGIN_PERCENT) / 100

NODE_CPU = SeriesKey.of(Metric.NODE_CPU_USAGE_CORES)
NODE_MEMORY = SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES)
SYS_CPU = SeriesKey.of(Metric.SYS_CPU_USAGE_CORES)
SYS_MEMORY = SeriesKey.of(Metric.SYS_MEMORY_USAGE_BYTES)
_POD_CPU = Metric.POD_CPU_USAGE_CORES.value
_POD_MEMORY = Metric.POD_MEMORY_USAGE_BYTES.value
CPU_PEAK, MEMORY_PEAK = (P95,), (P99,)
# SeriesKey(metric, uid): every field given, in order, without the NamedTuple's Python-level
# __new__ (two keys a pod a report)
_key = partial(tuple.__new__, SeriesKey)

_PROD_BY_DEFAULT = frozenset({KoordQoSClass.SYSTEM, KoordQoSClass.LSE, KoordQoSClass.LSR, KoordQoSClass.LS})


class Usage(NamedTuple):  # a tuple (as PodUsage): a report makes one a pod, three times cheaper than a dataclass
    cpu_cores: float
    memory_bytes: float


@dataclass(frozen=True, slots=True)
class Percentiles:
    duration_seconds: float
    by_kind: tuple[tuple[str, Usage], ...]  # ("p50", Usage), ... in PERCENTILES order


class PodUsage(NamedTuple):
    namespace: str
    name: str
    uid: str
    priority: PriorityBand
    qos: KoordQoSClass
    usage: Usage


# Usage((cpu, memory)) and PodUsage((...)) made as _key is, once a pod a report
_usage = partial(tuple.__new__, Usage)
_pod_usage = partial(tuple.__new__, PodUsage)


@dataclass(frozen=True, slots=True)
class NodeMetricSnapshot:
    update_time: float  # unix seconds
    node: Usage
    system: Usage
    aggregated: tuple[Percentiles, ...]
    pods: tuple[PodUsage, ...]  # in (namespace, name) order
    prod_reclaimable_milli_cpu: int
    prod_reclaimable_memory_bytes: int

    def usage_of(self, priority: PriorityBand) -> Usage:
        """Σ usage of the pods of one priority class (what the load-aware scheduler sums
        from podsMetric for prodUsageThresholds)."""
        pods = [pod.usage for pod in self.pods if pod.priority is priority]
        return Usage(sum(u.cpu_cores for u in pods), sum(u.memory_bytes for u in pods))


def priority_of(pod: PodInfo) -> PriorityBand:
    if pod.qos.band is not PriorityBand.NONE:
        return pod.qos.band
    if pod.qos.effective in _PROD_BY_DEFAULT:
        return PriorityBand.PROD
    if pod.qos.effective is KoordQoSClass.BE:
        return PriorityBand.BATCH
    return PriorityBand.NONE


def pod_requests(pod: PodInfo) -> tuple[int, int]:
    """Σ container requests: (milli-cores, bytes). Containers whose spec is unknown (NRI
    only) count their CPU request from cpu.shares (kubelet writes request*1024/1000, and 2
    for no request) and no memory request."""
    cpu = memory = 0
    for container in pod.containers:
        if container.spec is not None:
            cpu += container.spec.requests.get("cpu", 0)
            memory += container.spec.requests.get("memory", 0)
        elif container.linux.cpu_shares is not None and container.linux.cpu_shares > 2:
            cpu += container.linux.cpu_shares * 1000 // 1024
    return cpu, memory


class PodRow(NamedTuple):
    """What a report reads and writes for one pod that only changes with the pod."""

    cpu_key: SeriesKey
    memory_key: SeriesKey
    prod: bool
    requests: tuple[int, int]  # pod_requests(pod), for the Prod reclaim
    usage_head: tuple[str, str, str, PriorityBand, KoordQoSClass]  # a PodUsage's fields but its usage


def _row_order(row: PodRow) -> tuple[str, str]:
    return row.usage_head[0], row.usage_head[1]  # (namespace, name): the report's order


def pod_row(pod: PodInfo, share: Callable[[SeriesKey], SeriesKey]) -> PodRow:
    """The pod's row; its keys through `share` (the cache's shared_key)."""
    priority = priority_of(pod)
    return PodRow(share(_key((_POD_CPU, pod.uid, "", ()))), share(_key((_POD_MEMORY, pod.uid, "", ()))),
                  priority is PriorityBand.PROD, pod_requests(pod),
                  (pod.namespace, pod.name, pod.uid, priority, pod.qos.effective))


class StepPlan(NamedTuple):
    """One step's pods of a report: their rows, then both series keys of each pod (cpu,
    memory) and the peaks asked of each key, as `summary_columns` takes them."""

    rows: list[PodRow]
    keys: list[SeriesKey]
    permilles: list[tuple[int, ...]]


_NO_PEAKS = ((), ())  # a non-Prod pod's: its two keys ask for none


def step_plan(rows: list[PodRow]) -> StepPlan:
    keys: list[SeriesKey] = []
    permilles: list[tuple[int, ...]] = []
    for row in rows:
        keys += (row.cpu_key, row.memory_key)
        permilles += (CPU_PEAK, MEMORY_PEAK) if row.prod else _NO_PEAKS
    return StepPlan(rows, keys, permilles)


class PodRows(PodMemo[PodRow]):
    """Each pod's PodRow, kept by the caller across reports, and the steps of the last
    listing: a report of the same pods() tuple (nothing changed) reads them as they are."""

    def __init__(self, share: Callable[[SeriesKey], SeriesKey]) -> None:
        super().__init__(lambda pod: pod_row(pod, share))
        self._planned: tuple[tuple[PodInfo, ...] | None, list[StepPlan]] = (None, [])

    def plans(self, pods: tuple[PodInfo, ...]) -> Steps[list[StepPlan]]:
        """The pods' rows in (namespace, name) order, the report's, in steps of
        PODS_PER_STEP; the same list while `pods` is the same tuple (the informer's pods()
        while no pod changed). Rows are derived PODS_PER_STEP pods a step (a report right
        after start derives them all), then sorted in a step of their own."""
        if pods is self._planned[0]:
            return self._planned[1]
        of = self.of
        rows: list[PodRow] = []
        for at in range(0, len(pods), PODS_PER_STEP):
            rows += map(of, pods[at:at + PODS_PER_STEP])
            yield
        self.keep_only(pods)
        rows.sort(key=_row_order)
        yield  # the sort and the plans of 1,000 pods are ~1 ms each here
        plans = [step_plan(rows[at:at + PODS_PER_STEP]) for at in range(0, len(rows), PODS_PER_STEP)]
        self._planned = (pods, plans)
        return plans

    def clear(self) -> None:
        super().clear()
        self._planned = (None, [])


def take_snapshot(cache: MetricCache, pods: Iterable[PodInfo], policy: MetricCollectPolicy,
                  now: float | None = None, rows: PodRows | None = None) -> NodeMetricSnapshot | None:
    """Read every window the report needs; None when the node has no usage yet."""
    return run_steps(snapshot_steps(cache, pods, policy, time.time() if now is None else now, rows))


def snapshot_steps(cache: MetricCache, pods: Iterable[PodInfo], policy: MetricCollectPolicy,
                   now: float, rows: PodRows | None = None) -> Steps[NodeMetricSnapshot | None]:
    """take_snapshot, yielding every PODS_PER_STEP pods (see steps.py)."""
    policy = policy.effective()
    start = now - policy.aggregate_duration_seconds
    node = _average(cache, NODE_CPU, NODE_MEMORY, start, now)
    if node is None:
        return None
    pod_usages: list[PodUsage] = []  # in (namespace, name) order, as the report lists them
    reclaim_cpu = reclaim_memory = 0
    if rows is None:
        rows = PodRows(cache.shared_key)
    for plan in (yield from rows.plans(pods if isinstance(pods, tuple) else tuple(pods))):
        reclaims = _pods_usage(cache, plan, start, now, pod_usages)
        reclaim_cpu += reclaims[0]
        reclaim_memory += reclaims[1]
        yield
    system = _average(cache, SYS_CPU, SYS_MEMORY, start, now)
    if system is None:  # koordlet's definition: node minus pods, never negative
        system = Usage(max(node.cpu_cores - sum(p.usage.cpu_cores for p in pod_usages), 0.0),
                       max(node.memory_bytes - sum(p.usage.memory_bytes for p in pod_usages), 0.0))
    aggregated = tuple(p for p in (_percentiles(cache, d, now) for d in policy.durations_seconds) if p is not None)
    return NodeMetricSnapshot(now, node, system, aggregated, tuple(pod_usages), reclaim_cpu, reclaim_memory)


def _pods_usage(cache: MetricCache, plan: StepPlan, start: float, end: float,
                out: list[PodUsage]) -> tuple[int, int]:
    """Append the usage of the plan's pods that have some to `out` (both series of every pod
    read in one `summary_columns` call, the peaks of Prod pods with them); returns what they
    reclaim."""
    rows = plan.rows
    spans, means, peaks = cache.summary_columns(plan.keys, start, end, plan.permilles)
    reclaim_cpu = reclaim_memory = 0
    isfinite = math.isfinite
    covered: WindowSpan | None = None  # a span found to cover the window: most pods' series share one
    at = 0  # the next Prod pod's peaks
    for row, cpu, memory, cpu_span, memory_span in zip(rows, means[::2], means[1::2], spans[::2], spans[1::2]):
        if row.prod:
            cpu_peak, memory_peak = peaks[at], peaks[at + 1]
            at += 2
        if not isfinite(cpu) or not isfinite(memory):  # no sample (nan), or a broken one: must not break the report
            continue
        out.append(_pod_usage((*row.usage_head, _usage((cpu, memory)))))
        if not row.prod:
            continue
        # Prod reclaim: request - peak x (1 + margin), per resource, not below zero, the peak
        # being the cpu's p95 and the memory's p99; nothing while the pod's samples do not
        # cover half the window (the predictor's cold start). Inline: a call a pod cost more.
        if cpu_span is not covered or memory_span is not covered:
            if not (_covers(cpu_span, start, end) and _covers(memory_span, start, end)):
                continue
            if cpu_span is memory_span:
                covered = cpu_span
        if isfinite(cpu_peak) and isfinite(memory_peak):
            request_cpu, request_memory = row.requests
            reclaim_cpu += max(request_cpu - int(cpu_peak * _MARGIN * 1000), 0)
            reclaim_memory += max(request_memory - int(memory_peak * _MARGIN), 0)
    return reclaim_cpu, reclaim_memory


def _covers(span: WindowSpan | None, start: float, end: float) -> bool:
    """Whether a window's samples cover enough of [start, end] (the cold-start rule)."""
    return span is not None and covers_window(span.first_timestamp, span.last_timestamp, start, end,
                                              COLD_START_RATIO)


def _window(cache: MetricCache, cpu_key: SeriesKey, memory_key: SeriesKey,
            start: float, end: float) -> tuple[Mean, Mean] | None:
    """Both series' averages over [start, end] with at least one sample each (no cold-start
    rule); None also when a broken sample made one of them not finite."""
    try:
        cpu = cache.mean(cpu_key, start, end, min_coverage=0.0)
        memory = cache.mean(memory_key, start, end, min_coverage=0.0)
    except NotEnoughData:
        return None
    if not math.isfinite(cpu.avg) or not math.isfinite(memory.avg):  # must not break the report
        return None
    return cpu, memory


def _finite(aggregate: Aggregate) -> bool:
    return all(math.isfinite(v) for v in (aggregate.avg, aggregate.p50, aggregate.p90, aggregate.p95, aggregate.p99))


def _average(cache: MetricCache, cpu_key: SeriesKey, memory_key: SeriesKey,
             start: float, end: float) -> Usage | None:
    window = _window(cache, cpu_key, memory_key, start, end)
    return None if window is None else Usage(window[0].avg, window[1].avg)


def _percentiles(cache: MetricCache, duration: float, now: float) -> Percentiles | None:
    try:
        cpu = cache.aggregate(NODE_CPU, now - duration, now)
        memory = cache.aggregate(NODE_MEMORY, now - duration, now)
    except NotEnoughData:  # cold start: this window is not covered yet
        return None
    if not _finite(cpu) or not _finite(memory):
        return None
    return Percentiles(duration, tuple((kind, Usage(getattr(cpu, kind), getattr(memory, kind)))
                                       for kind in PERCENTILES))


# ---------------------------------------------------------------------------- document


def rfc3339(unix_seconds: float) -> str:
    """metav1.Time's JSON form: UTC, whole seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix_seconds))


def resource_map(usage: Usage) -> dict[str, Any]:
    """{"resources": {"cpu": ..., "memory": ...}}: cpu_quantity and memory_quantity, both
    figures checked at once (a report makes one a pod)."""
    cores, memory = usage
    if not math.isfinite(cores) or not math.isfinite(memory):
        raise ValueError("usage %r is not finite" % (usage,))
    return {"resources": {"cpu": cpu_quantity_from_milli(int(cores * 1000)),
                          "memory": memory_quantity_from_bytes(int(memory))}}


def status_document(snapshot: NodeMetricSnapshot) -> dict[str, Any]:
    """The `status` of a NodeMetric, keys and quantity strings as the CRD spells them, as
    dicts: what status_text_steps writes as text (the daemon sends and keeps only the text)."""
    node_metric: dict[str, Any] = {
        "nodeUsage": resource_map(snapshot.node),
        "systemUsage": resource_map(snapshot.system),
    }
    if snapshot.aggregated:
        node_metric["aggregatedNodeUsages"] = [
            {"usage": {kind: resource_map(usage) for kind, usage in window.by_kind},
             "duration": go_duration(window.duration_seconds)}
            for window in snapshot.aggregated
        ]
    return {
        "updateTime": rfc3339(snapshot.update_time),
        "nodeMetric": node_metric,
        "podsMetric": list(map(_pod_entry, snapshot.pods)),
        "prodReclaimableMetric": {"resource": {"resources": {
            "cpu": cpu_quantity_from_milli(snapshot.prod_reclaimable_milli_cpu),
            "memory": memory_quantity(snapshot.prod_reclaimable_memory_bytes),
        }}},
    }


# pod entries written between two yields of status_text_steps: ~1 ms of the loop here (an
# entry costs a few µs; the 25-pod steps of the reads would spend as much on the yields)
ENTRIES_PER_STEP = 200


_EMPTY_PODS = ',"podsMetric":[],'  # canonical text: podsMetric sorts between nodeMetric and prodReclaimableMetric


def status_text_steps(snapshot: NodeMetricSnapshot) -> Steps[str]:
    """canonical_json(status_document(snapshot)), the same text, without the pod entries'
    dicts: each entry is written as its canonical text (keys in sorted order) and spliced
    into the rest's, ENTRIES_PER_STEP entries between two yields (500 held the loop ~1.7 ms
    a step at 1,000 pods). What the route answers, the file holds and the API server is
    sent; at 1,000 pods the dicts and their encoding cost ~4.5 ms, the text ~2 ms."""
    rest = canonical_json(status_document(replace(snapshot, pods=())))
    before, found, after = rest.partition(_EMPTY_PODS)
    assert found, "no podsMetric in the status text"
    parts = [before, ',"podsMetric":[']
    pods = snapshot.pods
    for at in range(0, len(pods), ENTRIES_PER_STEP):
        if at:
            yield
            parts.append(",")
        parts.append(",".join(map(_pod_entry_text, pods[at:at + ENTRIES_PER_STEP])))
    parts += ("],", after)
    return "".join(parts)


def node_metric_text(node_name: str, policy: MetricCollectPolicy, status_text: str) -> str:
    """canonical_json(node_metric_object(...)) with the status given as its text."""
    return with_last_member(canonical_json(node_metric_object(node_name, policy, None)), "status", status_text)


def node_metric_text_steps(snapshot: NodeMetricSnapshot, node_name: str,
                           policy: MetricCollectPolicy) -> Steps[str]:
    """The whole object's canonical text, its status written by status_text_steps."""
    status_text = yield from status_text_steps(snapshot)
    return node_metric_text(node_name, policy, status_text)


def _pod_entry_text(pod: PodUsage) -> str:
    """_pod_entry's canonical text: name, namespace, podUsage, priority, qos."""
    cores, memory = pod.usage
    text = "".join(('{"name":', encode_basestring_ascii(pod.name), ',"namespace":', encode_basestring_ascii(pod.namespace),
                    ',"podUsage":{"resources":{"cpu":"', cpu_quantity_from_milli(int(cores * 1000)),
                    '","memory":"', memory_quantity_from_bytes(int(memory)), '"}}'))
    priority = _PRIORITY_TEXTS.get(id(pod.priority))
    if priority is not None:
        text += priority
    qos = _QOS_TEXTS.get(id(pod.qos))
    if qos is not None:
        text += qos
    return text + "}"


# the CRD's strings, looked up once: an enum's .value is a Python-level descriptor call, and
# so is its hash: the members (singletons) are found by id()
_PRIORITY_NAMES: dict[int, str] = {id(band): band.value for band in PriorityBand if band is not PriorityBand.NONE}
_QOS_NAMES: dict[int, str] = {id(qos): qos.value for qos in KoordQoSClass if qos is not KoordQoSClass.NONE}
_PRIORITY_TEXTS = {key: ',"priority":' + encode_basestring_ascii(name) for key, name in _PRIORITY_NAMES.items()}
_QOS_TEXTS = {key: ',"qos":' + encode_basestring_ascii(name) for key, name in _QOS_NAMES.items()}


def _pod_entry(pod: PodUsage) -> dict[str, Any]:
    entry: dict[str, Any] = {"namespace": pod.namespace, "name": pod.name, "podUsage": resource_map(pod.usage)}
    priority = _PRIORITY_NAMES.get(id(pod.priority))
    if priority is not None:
        entry["priority"] = priority
    qos = _QOS_NAMES.get(id(pod.qos))
    if qos is not None:
        entry["qos"] = qos
    return entry


def node_metric_object(node_name: str, policy: MetricCollectPolicy, status: dict[str, Any] | None) -> dict[str, Any]:
    """A whole NodeMetric (what the standalone API serves and what is created when missing)."""
    document: dict[str, Any] = {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": node_name},
        "spec": {"metricCollectPolicy": policy.to_spec()},
    }
    if status is not None:
        document["status"] = status
    return document

