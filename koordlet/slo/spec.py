"""NodeSLO documents to values and back.

`parse_node_slo_spec(mapping)` lays a spec document (the CRD's camelCase keys) over
koordlet's defaults and validates it; a bad document raises `NodeSLOError` naming the
field, and nothing else changes. Fields the CRD has but koordlet-py does not act on
(blkioQOS, networkQOS, hostApplications, ...) are accepted and ignored; a key the CRD does
not have is an error. `pod_cpu_burst` and `pod_memory_qos` lay a pod's own config (its
annotation) over the node's the same way.
"""

from __future__ import annotations

import dataclasses
import json
from enum import Enum
from typing import Any, Callable, Mapping

from koordlet.apis import keys
from koordlet.slo.node_slo import (
    CPU_EVICT_SATISFACTION_LOWER_MAX,
    CPU_EVICT_SATISFACTION_UPPER_MAX,
    MEMORY_QOS_OFF,
    CPUBurstPolicy,
    CPUBurstStrategy,
    CPUSuppressPolicy,
    MemoryQOS,
    NodeSLO,
    NodeSLOError,
    ResctrlQOS,
    ResourceQOS,
    ResourceQOSStrategy,
    ResourceThresholdStrategy,
)

# ----------------------------------------------------------------------------- parsing

Check = Callable[[str, Any], Any]


def _int(lo: int | None = None, hi: int | None = None) -> Check:
    def check(path: str, raw: Any) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise NodeSLOError(path, f"must be an integer, got {raw!r}")
        if lo is not None and raw < lo or hi is not None and raw > hi:
            bounds = f"[{'' if lo is None else lo}, {'' if hi is None else hi}]"
            raise NodeSLOError(path, f"{raw} is outside {bounds}")
        return raw
    return check


def _bool(path: str, raw: Any) -> bool:
    if not isinstance(raw, bool):
        raise NodeSLOError(path, f"must be true or false, got {raw!r}")
    return raw


def _enum(kind: type[Enum]) -> Check:
    def check(path: str, raw: Any) -> Enum:
        try:
            return kind(raw)
        except ValueError:
            allowed = ", ".join(str(member.value) for member in kind)
            raise NodeSLOError(path, f"{raw!r} is not one of {allowed}") from None
    return check


_PERCENT = _int(0, 100)

# CRD key -> (attribute, check) for each object we act on; "ignored" keys are in the CRD only.
_THRESHOLD_FIELDS: Mapping[str, tuple[str, Check]] = {
    "enable": ("enable", _bool),
    "cpuSuppressThresholdPercent": ("cpu_suppress_threshold_percent", _PERCENT),
    "cpuSuppressPolicy": ("cpu_suppress_policy", _enum(CPUSuppressPolicy)),
    "memoryEvictThresholdPercent": ("memory_evict_threshold_percent", _PERCENT),
    "memoryEvictLowerPercent": ("memory_evict_lower_percent", _PERCENT),
    "cpuEvictBESatisfactionUpperPercent": ("cpu_evict_be_satisfaction_upper_percent", _PERCENT),
    "cpuEvictBESatisfactionLowerPercent": ("cpu_evict_be_satisfaction_lower_percent", _PERCENT),
    "cpuEvictBEUsageThresholdPercent": ("cpu_evict_be_usage_threshold_percent", _PERCENT),
    "cpuEvictTimeWindowSeconds": ("cpu_evict_time_window_seconds", _int(1)),
}
_THRESHOLD_IGNORED = frozenset({
    "cpuSuppressMinPercent", "cpuEvictPolicy", "cpuEvictThresholdPercent", "cpuEvictLowerPercent",
    "allocatableEvictPriorityThreshold", "evictEnabledPriorityThreshold",
    "cpuAllocatableEvictThresholdPercent", "cpuAllocatableEvictLowerPercent",
    "memoryAllocatableEvictThresholdPercent", "memoryAllocatableEvictLowerPercent",
})
_CPU_QOS_FIELDS: Mapping[str, tuple[str, Check]] = {
    "enable": ("enable", _bool),
    "groupIdentity": ("group_identity", _int(-1, 2)),
    "schedIdle": ("sched_idle", _int(0, 1)),
}
_MEMORY_QOS_FIELDS: Mapping[str, tuple[str, Check]] = {
    "enable": ("enable", _bool),
    "minLimitPercent": ("min_limit_percent", _PERCENT),
    "lowLimitPercent": ("low_limit_percent", _PERCENT),
    "throttlingPercent": ("throttling_percent", _int(0)),
    "wmarkRatio": ("wmark_ratio", _PERCENT),
    "wmarkScalePermill": ("wmark_scale_permill", _int(1, 1000)),
    "wmarkMinAdj": ("wmark_min_adj", _int(-25, 50)),
    "priorityEnable": ("priority_enable", _int(0, 1)),
    "priority": ("priority", _int(0, 12)),
    "oomKillGroup": ("oom_kill_group", _int(0, 1)),
}
_RESCTRL_QOS_FIELDS: Mapping[str, tuple[str, Check]] = {
    "enable": ("enable", _bool),
    "catRangeStartPercent": ("cat_range_start_percent", _PERCENT),
    "catRangeEndPercent": ("cat_range_end_percent", _PERCENT),
    "mbaPercent": ("mba_percent", _PERCENT),
}
_BURST_FIELDS: Mapping[str, tuple[str, Check]] = {
    "policy": ("policy", _enum(CPUBurstPolicy)),
    "cpuBurstPercent": ("cpu_burst_percent", _int(0, 10000)),
    "cfsQuotaBurstPercent": ("cfs_quota_burst_percent", _int(100)),
    "cfsQuotaBurstPeriodSeconds": ("cfs_quota_burst_period_seconds", _int(-1)),
    "sharePoolThresholdPercent": ("share_pool_threshold_percent", _PERCENT),
}
_CLASS_KEYS = {"lsrClass": "lsr_class", "lsClass": "ls_class", "beClass": "be_class"}
_CLASS_IGNORED = frozenset({"systemClass", "cgroupRoot", "policies"})
_RESOURCE_QOS_IGNORED = frozenset({"blkioQOS", "networkQOS"})
_SPEC_IGNORED = frozenset({"extensions", "hostApplications", "systemStrategy"})
_MEMORY_QOS_IGNORED = frozenset({
    "pageCacheEnable", "pageCacheLimitPercent", "pageCacheLimitSize", "pageCacheReclaimSync"})
_CPU_QOS_IGNORED = frozenset({"coreExpeller"})


def _mapping(path: str, raw: Any) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise NodeSLOError(path, f"must be an object, got {type(raw).__name__}")
    return raw


def _overlay(base: Any, raw: Any, path: str, fields: Mapping[str, tuple[str, Check]],
             ignored: frozenset[str] = frozenset()) -> Any:
    """`base` with every known key of `raw` replaced; null keeps the default."""
    data = _mapping(path, raw)
    changes: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{path}.{key}"
        if key in fields:
            if value is not None:
                attribute, check = fields[key]
                changes[attribute] = check(where, value)
        elif key not in ignored:
            raise NodeSLOError(where, "unknown field")
    return dataclasses.replace(base, **changes) if changes else base


def _resource_qos(base: ResourceQOS, raw: Any, path: str) -> ResourceQOS:
    data = _mapping(path, raw)
    parts = {"cpuQOS": ("cpu_qos", _CPU_QOS_FIELDS, _CPU_QOS_IGNORED),
             "memoryQOS": ("memory_qos", _MEMORY_QOS_FIELDS, _MEMORY_QOS_IGNORED),
             "resctrlQOS": ("resctrl_qos", _RESCTRL_QOS_FIELDS, frozenset())}
    changes: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{path}.{key}"
        if key in parts and value is not None:
            attribute, fields, ignored = parts[key]
            changes[attribute] = _overlay(getattr(base, attribute), value, where, fields, ignored)
        elif key not in parts and key not in _RESOURCE_QOS_IGNORED:
            raise NodeSLOError(where, "unknown field")
    result = dataclasses.replace(base, **changes) if changes else base
    _check_resctrl(result.resctrl_qos, f"{path}.resctrlQOS")
    return result


def _check_resctrl(cfg: ResctrlQOS, path: str) -> None:
    if cfg.mba_percent % 10 != 0:
        raise NodeSLOError(f"{path}.mbaPercent", f"{cfg.mba_percent} is not a multiple of 10")
    if cfg.cat_range_end_percent <= cfg.cat_range_start_percent:
        raise NodeSLOError(f"{path}.catRangeEndPercent",
                           f"{cfg.cat_range_end_percent} must be above catRangeStartPercent "
                           f"{cfg.cat_range_start_percent}")


def _check_thresholds(cfg: ResourceThresholdStrategy, path: str) -> None:
    if cfg.memory_evict_lower >= cfg.memory_evict_threshold_percent:
        raise NodeSLOError(f"{path}.memoryEvictLowerPercent",
                           f"{cfg.memory_evict_lower} must be below memoryEvictThresholdPercent "
                           f"{cfg.memory_evict_threshold_percent}")
    lower = cfg.cpu_evict_be_satisfaction_lower_percent
    upper = cfg.cpu_evict_be_satisfaction_upper_percent
    if lower is None and upper is None:
        return
    if lower is None or upper is None:
        missing = "Lower" if lower is None else "Upper"
        raise NodeSLOError(f"{path}.cpuEvictBESatisfaction{missing}Percent",
                           "must be set together with its pair")
    if not 0 < lower <= CPU_EVICT_SATISFACTION_LOWER_MAX:
        raise NodeSLOError(f"{path}.cpuEvictBESatisfactionLowerPercent",
                           f"{lower} is outside (0, {CPU_EVICT_SATISFACTION_LOWER_MAX}]")
    if not 0 < upper < CPU_EVICT_SATISFACTION_UPPER_MAX:
        raise NodeSLOError(f"{path}.cpuEvictBESatisfactionUpperPercent",
                           f"{upper} is outside (0, {CPU_EVICT_SATISFACTION_UPPER_MAX})")
    if lower > upper:
        raise NodeSLOError(f"{path}.cpuEvictBESatisfactionLowerPercent",
                           f"lower {lower} is above upper {upper}")


def parse_node_slo_spec(raw: Any, base: NodeSLO | None = None) -> NodeSLO:
    """A NodeSLO from a spec mapping laid over `base` (koordlet's defaults when None)."""
    slo = NodeSLO() if base is None else base
    data = _mapping("spec", raw if raw is not None else {})
    threshold = slo.resource_used_threshold_with_be
    qos = slo.resource_qos_strategy
    burst = slo.cpu_burst_strategy
    for key, value in data.items():
        path = f"spec.{key}"
        if value is None or key in _SPEC_IGNORED:
            continue
        if key == "resourceUsedThresholdWithBE":
            threshold = _overlay(threshold, value, path, _THRESHOLD_FIELDS, _THRESHOLD_IGNORED)
        elif key == "cpuBurstStrategy":
            burst = _overlay(burst, value, path, _BURST_FIELDS)
        elif key == "resourceQOSStrategy":
            qos = _qos_strategy(qos, value, path)
        else:
            raise NodeSLOError(path, "unknown field")
    _check_thresholds(threshold, "spec.resourceUsedThresholdWithBE")
    return NodeSLO(threshold, qos, burst)


def _qos_strategy(base: ResourceQOSStrategy, raw: Any, path: str) -> ResourceQOSStrategy:
    changes: dict[str, Any] = {}
    for key, value in _mapping(path, raw).items():
        where = f"{path}.{key}"
        if key in _CLASS_KEYS and value is not None:
            attribute = _CLASS_KEYS[key]
            changes[attribute] = _resource_qos(getattr(base, attribute), value, where)
        elif key not in _CLASS_KEYS and key not in _CLASS_IGNORED:
            raise NodeSLOError(where, "unknown field")
    return dataclasses.replace(base, **changes) if changes else base


def _document(value: Any, fields: Mapping[str, tuple[str, Check]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, (attribute, _) in fields.items():
        item = getattr(value, attribute)
        if item is not None:
            out[key] = item.value if isinstance(item, Enum) else item
    return out


def node_slo_document(slo: NodeSLO) -> dict[str, Any]:
    """The spec as the CRD spells it (what /api/v1/nodeslo shows)."""
    classes = {}
    for key, attribute in _CLASS_KEYS.items():
        qos: ResourceQOS = getattr(slo.resource_qos_strategy, attribute)
        classes[key] = {"cpuQOS": _document(qos.cpu_qos, _CPU_QOS_FIELDS),
                        "memoryQOS": _document(qos.memory_qos, _MEMORY_QOS_FIELDS),
                        "resctrlQOS": _document(qos.resctrl_qos, _RESCTRL_QOS_FIELDS)}
    return {"resourceUsedThresholdWithBE": _document(slo.resource_used_threshold_with_be, _THRESHOLD_FIELDS),
            "resourceQOSStrategy": classes,
            "cpuBurstStrategy": _document(slo.cpu_burst_strategy, _BURST_FIELDS)}


POD_CPU_BURST_ANNOTATION = keys.POD_CPU_BURST
_POD_BURST_FIELDS = {k: v for k, v in _BURST_FIELDS.items() if k != "sharePoolThresholdPercent"}


def pod_cpu_burst(node: CPUBurstStrategy, annotation: str | None) -> CPUBurstStrategy:
    """The node's burst settings with a pod's `koordinator.sh/cpuBurst` JSON laid over them
    (policy, cpuBurstPercent, cfsQuotaBurstPercent, cfsQuotaBurstPeriodSeconds).
    NodeSLOError, naming the field, for an annotation that is not valid."""
    if not annotation:
        return node
    try:
        data = json.loads(annotation)
    except ValueError as exc:
        raise NodeSLOError(POD_CPU_BURST_ANNOTATION, f"not JSON: {exc}") from None
    return _overlay(node, data, POD_CPU_BURST_ANNOTATION, _POD_BURST_FIELDS)


POD_MEMORY_QOS_ANNOTATION = keys.POD_MEMORY_QOS
_POD_MEMORY_QOS_FIELDS = {k: v for k, v in _MEMORY_QOS_FIELDS.items() if k != "enable"}


class PodMemoryQOSPolicy(Enum):
    DEFAULT = "default"  # the pod's fields over its class's config
    NONE = "none"        # memory QoS off for this pod
    AUTO = "auto"        # the pod's fields over koordlet's default config for its class


def pod_memory_qos(node: MemoryQOS, class_default: MemoryQOS, annotation: str | None) -> MemoryQOS:
    """The memory QoS of one pod: its class's config (`node`, MEMORY_QOS_OFF when the class
    has it off) with the pod's `koordinator.sh/memoryQOS` JSON laid over it: a policy and
    any memoryQOS field but enable. A pod that asks for its own config has memory QoS on.
    NodeSLOError, naming the field, for an annotation that is not valid."""
    if not annotation:
        return node
    try:
        data = json.loads(annotation)
    except (ValueError, RecursionError) as exc:
        raise NodeSLOError(POD_MEMORY_QOS_ANNOTATION, f"not JSON: {exc}") from None
    fields = dict(_mapping(POD_MEMORY_QOS_ANNOTATION, data))
    raw_policy = fields.pop("policy", None)
    policy = PodMemoryQOSPolicy.DEFAULT if raw_policy in (None, "") else \
        _enum(PodMemoryQOSPolicy)(f"{POD_MEMORY_QOS_ANNOTATION}.policy", raw_policy)
    if policy is PodMemoryQOSPolicy.NONE:
        return MEMORY_QOS_OFF
    base = class_default if policy is PodMemoryQOSPolicy.AUTO else node
    merged = _overlay(base, fields, POD_MEMORY_QOS_ANNOTATION, _POD_MEMORY_QOS_FIELDS)
    asked = policy is PodMemoryQOSPolicy.AUTO or any(value is not None for value in fields.values())
    return dataclasses.replace(merged, enable=True) if asked and not merged.enable else merged


def spec_of_document(raw: Any) -> Any:
    """The spec of a whole NodeSLO object (apiVersion/kind/spec), or the document itself."""
    if isinstance(raw, Mapping) and ("kind" in raw or "apiVersion" in raw):
        if raw.get("kind") not in (None, "NodeSLO"):
            raise NodeSLOError("kind", f"{raw.get('kind')!r} is not NodeSLO")
        return raw.get("spec") or {}
    return raw
