"""The metric cache as its readers and writers see it: the second hub.

Collectors append samples; reports, QoS strategies and /metrics read windows.
A series is one metric name plus the object it measures (node, pod, container)
and optional extra labels (e.g. PSI resource and window). Values are floats in
the unit the metric's name says (cores, bytes, ratio, seconds).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable, NamedTuple, Protocol, Sequence


class Metric(str, Enum):
    """The series names every agent agrees on. Collectors may add more."""

    NODE_CPU_USAGE_CORES = "node_cpu_usage_cores"
    NODE_MEMORY_USAGE_BYTES = "node_memory_usage_bytes"  # working set: total - available
    SYS_CPU_USAGE_CORES = "sys_cpu_usage_cores"  # node minus all pods
    SYS_MEMORY_USAGE_BYTES = "sys_memory_usage_bytes"
    POD_CPU_USAGE_CORES = "pod_cpu_usage_cores"
    POD_MEMORY_USAGE_BYTES = "pod_memory_usage_bytes"  # working set: usage - inactive_file
    CONTAINER_CPU_USAGE_CORES = "container_cpu_usage_cores"
    CONTAINER_MEMORY_USAGE_BYTES = "container_memory_usage_bytes"
    CONTAINER_CPU_THROTTLED_RATIO = "container_cpu_throttled_ratio"  # throttled periods / periods
    CONTAINER_CPI = "container_cpi"  # cycles per instruction
    BE_CPU_USAGE_CORES = "be_cpu_usage_cores"  # sum over BE pods
    BE_MEMORY_USAGE_BYTES = "be_memory_usage_bytes"
    NODE_PSI = "node_psi"  # extra labels: resource=cpu|memory|io, kind=some|full, window=avg10
    # added with the collectors (issue 10); the names above are unchanged
    POD_CPU_THROTTLED_RATIO = "pod_cpu_throttled_ratio"
    CONTAINER_CPU_CYCLES = "container_cpu_cycles"  # counted over one CPI window, as koordlet
    CONTAINER_INSTRUCTIONS = "container_instructions"  # counted over one CPI window
    BE_CPU_LIMIT_CORES = "be_cpu_limit_cores"  # the BE cgroup's real limit (quota or cpuset)
    BE_CPU_REQUEST_CORES = "be_cpu_request_cores"  # sum of BE pods' batch-cpu requests
    # extra labels: interface=<name>, direction=rx|tx
    NODE_NETWORK_BYTES_PER_SECOND = "node_network_bytes_per_second"
    NODE_NETWORK_PACKETS_PER_SECOND = "node_network_packets_per_second"
    NODE_NETWORK_ERRORS_PER_SECOND = "node_network_errors_per_second"


class SeriesKey(NamedTuple):
    """Which series: a tuple, so hashing and comparing it (every append and read) runs in C;
    a frozen dataclass hashed in Python was a tenth of the metric cache's time."""

    metric: str  # a Metric value, or a collector's own name
    pod_uid: str = ""
    container_id: str = ""
    labels: tuple[tuple[str, str], ...] = ()  # sorted (name, value) pairs

    @staticmethod
    def of(metric: str | Metric, pod_uid: str = "", container_id: str = "", **labels: str) -> SeriesKey:
        name = metric.value if isinstance(metric, Metric) else metric
        return SeriesKey(name, pod_uid, container_id, tuple(sorted(labels.items())))


@dataclass(frozen=True, slots=True)
class Sample:
    key: SeriesKey
    timestamp: float  # unix seconds
    value: float


class AggregationType(str, Enum):
    AVG = "avg"
    P50 = "p50"
    P90 = "p90"
    P95 = "p95"
    P99 = "p99"
    LAST = "last"
    COUNT = "count"


@dataclass(frozen=True, slots=True)
class Aggregate:
    """One series over one window. Percentiles are of the samples in the window."""

    count: int
    avg: float
    p50: float
    p90: float
    p95: float
    p99: float
    last: float
    first_timestamp: float
    last_timestamp: float

    def get(self, kind: AggregationType) -> float:
        return float(self.count) if kind is AggregationType.COUNT else float(getattr(self, kind.value))


class Mean(NamedTuple):
    """One series' average over one window, without the percentiles (no sort, no copy). A
    tuple: a report builds two a pod, and a frozen dataclass costs three times as much to make."""

    count: int  # type: ignore[assignment]  # (hides tuple.count, which no reader of a Mean wants)
    avg: float
    first_timestamp: float
    last_timestamp: float


class WindowSpan(NamedTuple):
    """Where one window lies in a series: [lo, hi) offsets from the series' oldest value,
    how many samples, and the first and last of their timestamps. Series written in the
    same rounds share one span object for the same window."""

    lo: int
    hi: int
    count: int  # type: ignore[assignment]  # (hides tuple.count)
    first_timestamp: float
    last_timestamp: float


class WindowColumns(NamedTuple):
    """`summaries` as columns, for a reader of many series that wants no object a series:
    key i's span (None when the window holds no sample of it), its mean, and the asked
    percentiles of every key one after the other (key 0's first). A key with no span has a
    mean and percentiles of nan, as a broken sample would give, so a reader that skips
    what is not finite needs no second test."""

    spans: list[WindowSpan | None]
    means: list[float]
    percentiles: list[float]


class NotEnoughData(LookupError):
    """The window holds too few samples to answer (the cold-start rule): readers must
    treat the figure as unknown, never as zero."""


class MetricCache(Protocol):
    def append(self, samples: Iterable[Sample]) -> None: ...

    def aggregate(self, key: SeriesKey, start: float, end: float, min_coverage: float = 0.5) -> Aggregate:
        """Samples with start <= timestamp <= end. Raises NotEnoughData under the cold-start rule:
        no sample, or samples spanning less than ``min_coverage`` of the window (koordlet's
        0.5; koordlet's plain averages skip the rule: pass 0)."""
        ...

    def mean(self, key: SeriesKey, start: float, end: float, min_coverage: float = 0.5) -> Mean:
        """The average of `aggregate` (same window, same rule, same value) at a fraction of
        its cost: for readers that need no percentile."""
        ...

    def percentile(self, key: SeriesKey, start: float, end: float, permille: int) -> float:
        """One percentile of the window by koordlet's nearest-rank rule (no coverage rule)."""
        ...

    def summary(self, key: SeriesKey, start: float, end: float,
                permilles: tuple[int, ...] = ()) -> tuple[Mean, tuple[float, ...]]:
        """`mean` with no coverage rule and the asked percentiles (koordlet's nearest rank) of
        one window, for a reader that wants both: one search, one copy, one sort."""
        ...

    def summaries(self, keys: Sequence[SeriesKey], start: float, end: float,
                  permilles: Sequence[tuple[int, ...]]) -> list[tuple[Mean, tuple[float, ...]] | None]:
        """`summary` of many series at once (key i with the percentiles permilles[i]), None
        for a series with no sample in the window: what a report reads, in one pass."""
        ...

    def summary_columns(self, keys: Sequence[SeriesKey], start: float, end: float,
                        permilles: Sequence[tuple[int, ...]]) -> WindowColumns:
        """`summaries` as WindowColumns."""
        ...

    def latest(self, key: SeriesKey) -> Sample | None: ...

    def latest_value(self, key: SeriesKey) -> tuple[float, float] | None:
        """(timestamp, value) of the newest sample, without building a Sample."""
        ...

    def latest_values(self, keys: Sequence[SeriesKey], oldest: float) -> list[float | None]:
        """The newest value of each series, None where it has none at or after `oldest`."""
        ...

    def keys(self, metric: str | Metric) -> tuple[SeriesKey, ...]:
        """Every series of this metric that has samples in the retention window."""
        ...

    def shared_key(self, key: SeriesKey) -> SeriesKey:
        """The cache's own object equal to `key` while it holds that series, else `key`
        (for readers that keep keys: one object a series, not a copy each)."""
        ...
