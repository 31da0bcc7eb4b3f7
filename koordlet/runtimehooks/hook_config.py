"""The hooks' configuration: koordinator's defaults, plus what the host can do.

The NodeSLO in force overrides the fields it owns (`slo_rules.hook_config_from_slo`),
and the QoS manager's CPU suppress decision is carried in `be_suppress`; until the
module starts, the defaults below are what koordlet ships with. Host
capabilities are probed once at start by the module (through system/), so the
policy never names a field this host cannot hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Mapping

from koordlet.apis.keys import RECLAIMED_MEMORY, RECLAIMED_MILLICPU
from koordlet.apis.qos import KoordQoSClass
from koordlet.ports.be_suppress import NOT_SUPPRESSED, BESuppress
from system.cgroup_layout import QoSTier

# koordlet's CPUShareUnitValue / CPUSharesMinValue / CFSBasePeriodValue / CFSQuotaMinValue.
CPU_SHARES_PER_CORE = 1024
CPU_SHARES_MIN = 2
CPU_SHARES_MAX = 262144
CFS_BASE_PERIOD_US = 100_000
CFS_QUOTA_MIN_US = 1000


class CpuManagerPolicy(Enum):
    """kubelet's CPU manager policy (node annotation kubelet.koordinator.sh/cpu-manager-policy)."""

    NONE = "none"
    STATIC = "static"


def _default_reclaimed_map() -> Mapping[str, str]:
    # katalyst --orm-resource-names-map default example: reclaimed_millicpu=cpu, reclaimed_memory=memory.
    return MappingProxyType({RECLAIMED_MILLICPU: "cpu", RECLAIMED_MEMORY: "memory"})


@dataclass(frozen=True, slots=True)
class HostCaps:
    """What the host's cgroups offer, probed once at start."""

    cgroup_version: int = 1  # of the cpu controller
    bvt_supported: bool = False  # cpu.bvt_warp_ns or kernel.sched_group_identity_enabled exists (Anolis)
    cpu_idle_supported: bool = False  # cpu.idle exists (kernel >= 5.15)


@dataclass(frozen=True, slots=True)
class HookConfig:
    # BatchResource: koordinator's resourceQOSStrategy enables CFS quota for batch pods by default.
    enable_cfs_quota: bool = True
    cfs_period_us: int = CFS_BASE_PERIOD_US
    # GroupIdentity: cpu.bvt_warp_ns per class from the NodeSLO in force; empty while none
    # is (no rule: nothing written). bvt_effective is False while the kernel's switch
    # could not be turned on (the values would do nothing).
    bvt: Mapping[KoordQoSClass, int] = field(default_factory=lambda: MappingProxyType({}))
    # what a pod of no class (or SYSTEM) gets: its kube QoS tier's value, as in koordlet
    bvt_by_tier: Mapping[QoSTier, int] = field(default_factory=lambda: MappingProxyType({}))
    bvt_effective: bool = True
    be_cpu_idle: bool = True  # cpu.idle=1 on BE pod cgroups where the kernel has it
    # CPUSetAllocator
    node_cpus: frozenset[int] = frozenset()  # online CPUs of the node; empty = unknown
    reserved_cpus: frozenset[int] = frozenset()  # kept off every shared pool
    system_qos_cpus: frozenset[int] = frozenset()  # SYSTEM pods' cpus, when set
    cpu_manager_policy: CpuManagerPolicy = CpuManagerPolicy.NONE
    # Katalyst's reclaimed-resource map: extended resource name -> native name.
    reclaimed_resources: Mapping[str, str] = field(default_factory=_default_reclaimed_map)
    host: HostCaps = field(default_factory=HostCaps)
    # The BE tier as CPU suppress left it: BE cpusets and quotas stay inside it.
    be_suppress: BESuppress = NOT_SUPPRESSED
