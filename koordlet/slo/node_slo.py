"""NodeSLO (slo.koordinator.sh/v1alpha1) spec: the thresholds the QoS strategies and hooks
act on, as values with koordlet's defaults (koordinator `pkg/util/config.go`, v1.1).
Reading documents into them, and writing them back, is slo/spec.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from koordlet.apis.qos import KoordQoSClass


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


# koordlet's "none" memory QoS: what a class with memory QoS off, or a pod with policy
# none, gets (the kernel's defaults for memory.min / low / high)
MEMORY_QOS_OFF = MemoryQOS(enable=False, min_limit_percent=0, low_limit_percent=0, throttling_percent=0,
                           wmark_ratio=0, wmark_scale_permill=50, wmark_min_adj=0)


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
