"""NodeSLO (slo.koordinator.sh/v1alpha1) spec: the thresholds the QoS strategies and hooks act on.

Values only. `parse_node_slo_spec(mapping)` lays a spec document (the CRD's camelCase
keys) over koordlet's defaults (koordinator `pkg/util/config.go`, v1.1) and validates
it; a bad document raises `NodeSLOError` naming the field, and nothing else changes.
Fields the CRD has but koordlet-py does not act on (blkioQOS, networkQOS,
hostApplications, ...) are accepted and ignored; a key the CRD does not have is an error.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Mapping

from koordlet.statesinformer.model import KoordQoSClass


class NodeSLOError(ValueError):
    """The document is not a valid NodeSLO spec; `field` is the dotted path of the culprit."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field = field_path


class CPUSuppressPolicy(Enum):
    CPUSET = "cpuset"
    CFS_QUOTA = "cfsQuota"


class CPUBurstPolicy(Enum):
    NONE = "none"
    CPU_BURST_ONLY = "cpuBurstOnly"
    CFS_QUOTA_BURST_ONLY = "cfsQuotaBurstOnly"
    AUTO = "auto"

    @property
    def cpu_burst(self) -> bool:
        return self in (CPUBurstPolicy.CPU_BURST_ONLY, CPUBurstPolicy.AUTO)

    @property
    def cfs_quota_burst(self) -> bool:
        return self in (CPUBurstPolicy.CFS_QUOTA_BURST_ONLY, CPUBurstPolicy.AUTO)


# koordlet: cpu evict needs lower in (0, 60] and upper in (0, 100).
CPU_EVICT_SATISFACTION_LOWER_MAX = 60
CPU_EVICT_SATISFACTION_UPPER_MAX = 100
MEMORY_RELEASE_BUFFER_PERCENT = 2


@dataclass(frozen=True, slots=True)
class ResourceThresholdStrategy:
    """spec.resourceUsedThresholdWithBE."""

    enable: bool = False
    cpu_suppress_threshold_percent: int = 65
    cpu_suppress_policy: CPUSuppressPolicy = CPUSuppressPolicy.CPUSET
    memory_evict_threshold_percent: int = 70
    memory_evict_lower_percent: int | None = None  # None: threshold - 2
    cpu_evict_be_satisfaction_upper_percent: int | None = None
    cpu_evict_be_satisfaction_lower_percent: int | None = None
    cpu_evict_be_usage_threshold_percent: int = 90
    cpu_evict_time_window_seconds: int | None = None  # None: 2 x the collect interval

    @property
    def memory_evict_lower(self) -> int:
        if self.memory_evict_lower_percent is not None:
            return self.memory_evict_lower_percent
        return self.memory_evict_threshold_percent - MEMORY_RELEASE_BUFFER_PERCENT

    @property
    def cpu_evict_configured(self) -> bool:
        return (self.cpu_evict_be_satisfaction_lower_percent is not None
                and self.cpu_evict_be_satisfaction_upper_percent is not None)


@dataclass(frozen=True, slots=True)
class CPUQOS:
    """resourceQOSStrategy.<class>.cpuQOS: group identity (bvt) and cpu.idle, applied by the
    runtime hooks (GroupIdentity), not by the QoS manager."""

    enable: bool = False
    group_identity: int = 0
    sched_idle: int = 0


@dataclass(frozen=True, slots=True)
class MemoryQOS:
    enable: bool = False
    min_limit_percent: int = 0
    low_limit_percent: int = 0
    throttling_percent: int = 0  # 0: memory.high stays unlimited
    wmark_ratio: int = 95
    wmark_scale_permill: int = 20
    wmark_min_adj: int = 0
    priority_enable: int = 0
    priority: int = 0
    oom_kill_group: int = 0


@dataclass(frozen=True, slots=True)
class ResctrlQOS:
    enable: bool = False
    cat_range_start_percent: int = 0
    cat_range_end_percent: int = 100
    mba_percent: int = 100


@dataclass(frozen=True, slots=True)
class ResourceQOS:
    cpu_qos: CPUQOS = field(default_factory=CPUQOS)
    memory_qos: MemoryQOS = field(default_factory=MemoryQOS)
    resctrl_qos: ResctrlQOS = field(default_factory=ResctrlQOS)


def _class_default(group_identity: int, wmark_min_adj: int, cat_end: int) -> ResourceQOS:
    return ResourceQOS(CPUQOS(group_identity=group_identity),
                       MemoryQOS(wmark_min_adj=wmark_min_adj),
                       ResctrlQOS(cat_range_end_percent=cat_end))


@dataclass(frozen=True, slots=True)
class ResourceQOSStrategy:
    """spec.resourceQOSStrategy: per-class settings, every switch off by default."""

    lsr_class: ResourceQOS = field(default_factory=lambda: _class_default(2, -25, 100))
    ls_class: ResourceQOS = field(default_factory=lambda: _class_default(2, -25, 100))
    be_class: ResourceQOS = field(default_factory=lambda: _class_default(-1, 50, 30))

    def for_class(self, qos: KoordQoSClass) -> ResourceQOS | None:
        """LSE shares LSR's settings; a pod without a class is treated as LS; SYSTEM has none."""
        if qos in (KoordQoSClass.LSE, KoordQoSClass.LSR):
            return self.lsr_class
        if qos in (KoordQoSClass.LS, KoordQoSClass.NONE):
            return self.ls_class
        if qos is KoordQoSClass.BE:
            return self.be_class
        return None


@dataclass(frozen=True, slots=True)
class CPUBurstStrategy:
    policy: CPUBurstPolicy = CPUBurstPolicy.NONE
    cpu_burst_percent: int = 1000
    cfs_quota_burst_percent: int = 300
    cfs_quota_burst_period_seconds: int = -1  # -1: bursts without a time limit
    share_pool_threshold_percent: int = 50


@dataclass(frozen=True, slots=True)
class NodeSLO:
    resource_used_threshold_with_be: ResourceThresholdStrategy = field(
        default_factory=ResourceThresholdStrategy)
    resource_qos_strategy: ResourceQOSStrategy = field(default_factory=ResourceQOSStrategy)
    cpu_burst_strategy: CPUBurstStrategy = field(default_factory=CPUBurstStrategy)

    def resource_qos(self, qos: KoordQoSClass) -> ResourceQOS | None:
        return self.resource_qos_strategy.for_class(qos)

    def cpu_qos(self, qos: KoordQoSClass) -> CPUQOS | None:
        """What the GroupIdentity hook needs: groupIdentity / schedIdle for a class."""
        settings = self.resource_qos(qos)
        return None if settings is None else settings.cpu_qos

    def group_identities(self) -> dict[KoordQoSClass, int]:
        """cpu.bvt_warp_ns per class for the GroupIdentity hook: the class's groupIdentity
        when its cpuQOS is enabled, else 0 (koordlet's "none" CPU QoS)."""
        out = {}
        for qos in (KoordQoSClass.LSR, KoordQoSClass.LS, KoordQoSClass.BE):
            cfg = self.cpu_qos(qos)
            out[qos] = cfg.group_identity if cfg is not None and cfg.enable else 0
        return out

    def memory_qos(self, qos: KoordQoSClass) -> MemoryQOS | None:
        settings = self.resource_qos(qos)
        return None if settings is None else settings.memory_qos

    def resctrl_qos(self, qos: KoordQoSClass) -> ResctrlQOS | None:
        settings = self.resource_qos(qos)
        return None if settings is None else settings.resctrl_qos


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


POD_CPU_BURST_ANNOTATION = "koordinator.sh/cpuBurst"
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


def spec_of_document(raw: Any) -> Any:
    """The spec of a whole NodeSLO object (apiVersion/kind/spec), or the document itself."""
    if isinstance(raw, Mapping) and ("kind" in raw or "apiVersion" in raw):
        if raw.get("kind") not in (None, "NodeSLO"):
            raise NodeSLOError("kind", f"{raw.get('kind')!r} is not NodeSLO")
        return raw.get("spec") or {}
    return raw
