"""The NodeMetric spec's metricCollectPolicy: which windows the report averages and
aggregates, and how often it is sent. From the cluster object when there is one, else
from the daemon's flags (standalone).

Defaults and floors are koordlet's (statesinformer/impl/states_nodemetric.go):
aggregateDurationSeconds 300 (at least 60), reportIntervalSeconds 60 (at least 30),
durations 5m/10m/30m, nodeMemoryCollectPolicy usageWithoutPageCache.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from koordlet.config import defaults
from koordlet.config.parsers import parse_duration
from koordlet.reporter.quantities import go_duration

DEFAULT_AGGREGATE_DURATION_SECONDS = defaults.AGGREGATE_DURATION_SECONDS
MIN_AGGREGATE_DURATION_SECONDS = defaults.MIN_AGGREGATE_DURATION_SECONDS
DEFAULT_REPORT_INTERVAL_SECONDS = defaults.REPORT_INTERVAL_SECONDS
MIN_REPORT_INTERVAL_SECONDS = defaults.MIN_REPORT_INTERVAL_SECONDS
DEFAULT_DURATIONS_SECONDS = defaults.AGGREGATE_DURATIONS_SECONDS
MEMORY_POLICIES = ("usageWithoutPageCache", "usageWithHotPageCache", "usageWithPageCache")


class PolicyError(ValueError):
    """The metricCollectPolicy is not usable; the message says which field."""


@dataclass(frozen=True, slots=True)
class MetricCollectPolicy:
    aggregate_duration_seconds: int = DEFAULT_AGGREGATE_DURATION_SECONDS
    report_interval_seconds: int = DEFAULT_REPORT_INTERVAL_SECONDS
    durations_seconds: tuple[float, ...] = DEFAULT_DURATIONS_SECONDS
    # Only usageWithoutPageCache is collected today (working set); the others are carried
    # through so the document says what the cluster asked for.
    node_memory_collect_policy: str = "usageWithoutPageCache"

    def effective(self) -> "MetricCollectPolicy":
        """The policy with koordlet's floors applied (a smaller value is raised, not refused)."""
        return replace(
            self,
            aggregate_duration_seconds=max(self.aggregate_duration_seconds, MIN_AGGREGATE_DURATION_SECONDS),
            report_interval_seconds=max(self.report_interval_seconds, MIN_REPORT_INTERVAL_SECONDS),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "aggregateDurationSeconds": self.aggregate_duration_seconds,
            "reportIntervalSeconds": self.report_interval_seconds,
            "nodeAggregatePolicy": {"durations": [go_duration(d) for d in self.durations_seconds]},
            "nodeMemoryCollectPolicy": self.node_memory_collect_policy,
        }


def policy_from_spec(spec: Mapping[str, Any] | None, fallback: MetricCollectPolicy) -> MetricCollectPolicy:
    """Merge a NodeMetric `spec` over `fallback` field by field, as koordlet merges the
    object's spec over its defaults. Raises PolicyError on a malformed field."""
    if not spec:
        return fallback
    collect = spec.get("metricCollectPolicy")
    if collect is None:
        return fallback
    if not isinstance(collect, Mapping):
        raise PolicyError("spec.metricCollectPolicy is not an object")
    result = fallback
    if collect.get("aggregateDurationSeconds") is not None:
        result = replace(result, aggregate_duration_seconds=_seconds(collect, "aggregateDurationSeconds"))
    if collect.get("reportIntervalSeconds") is not None:
        result = replace(result, report_interval_seconds=_seconds(collect, "reportIntervalSeconds"))
    aggregate = collect.get("nodeAggregatePolicy")
    if aggregate is not None:
        if not isinstance(aggregate, Mapping) or not isinstance(aggregate.get("durations", []), list):
            raise PolicyError("spec.metricCollectPolicy.nodeAggregatePolicy.durations is not a list")
        result = replace(result, durations_seconds=tuple(_duration(d) for d in aggregate.get("durations", [])))
    memory = collect.get("nodeMemoryCollectPolicy")
    if memory is not None:
        if memory not in MEMORY_POLICIES:
            raise PolicyError("spec.metricCollectPolicy.nodeMemoryCollectPolicy %r is not one of %s"
                              % (memory, ", ".join(MEMORY_POLICIES)))
        result = replace(result, node_memory_collect_policy=memory)
    return result


def _seconds(collect: Mapping[str, Any], key: str) -> int:
    value = collect[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise PolicyError("spec.metricCollectPolicy.%s must be a positive integer, got %r" % (key, value))
    return value


def _duration(text: Any) -> float:
    if not isinstance(text, str):
        raise PolicyError("aggregate duration %r is not a duration string" % (text,))
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise PolicyError("aggregate duration %r: %s" % (text, exc)) from None
    if seconds <= 0:
        raise PolicyError("aggregate duration %r must be positive" % (text,))
    return seconds
