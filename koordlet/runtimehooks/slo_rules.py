"""The hooks' rules from the NodeSLO in force and the BE suppress decision: pure functions.

koordlet semantics (runtimehooks groupidentity / batchresource rules):
- GroupIdentity: cpu.bvt_warp_ns per class is the class's cpuQOS.groupIdentity when its
  cpuQOS.enable is true, else 0 (koordlet's "none" CPU QoS resets it); LSE follows LSR.
  Pods of no class go by kube QoS tier: Guaranteed as LSR when LSR is enabled, else as
  LS when LS is, else 0; Burstable as LS; BestEffort as BE. No NodeSLO in force: no rule.
- BE cpu.idle: beClass.cpuQOS.enable and schedIdle == 1.
- BatchResource: BE pods' CFS quota is unset while CPU suppress runs with the cfsQuota
  policy (the besteffort tier's quota then limits them, and on v1 it must not be below a
  child's).
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from koordlet.apis.qos import KoordQoSClass
from koordlet.ports.be_suppress import BESuppress
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.slo.node_slo import CPUSuppressPolicy, NodeSLO
from system.cgroup_layout import QoSTier


def cpu_qos_enabled(slo: NodeSLO) -> frozenset[KoordQoSClass]:
    """The classes whose cpuQOS is enabled."""
    return frozenset(qos for qos in (KoordQoSClass.LSR, KoordQoSClass.LS, KoordQoSClass.BE)
                     if (cfg := slo.cpu_qos(qos)) is not None and cfg.enable)


def bvt_by_tier(slo: NodeSLO) -> dict[QoSTier, int]:
    values, enabled = slo.group_identities(), cpu_qos_enabled(slo)
    guaranteed = values[KoordQoSClass.LSR] if KoordQoSClass.LSR in enabled else \
        values[KoordQoSClass.LS] if KoordQoSClass.LS in enabled else 0
    return {QoSTier.GUARANTEED: guaranteed, QoSTier.BURSTABLE: values[KoordQoSClass.LS],
            QoSTier.BESTEFFORT: values[KoordQoSClass.BE]}


def any_cpu_qos_enabled(slo: NodeSLO) -> bool:
    return bool(cpu_qos_enabled(slo))


def hook_config_from_slo(slo: NodeSLO, base: HookConfig, in_force: bool = True) -> HookConfig:
    """`base` (host facts, CPUs) with every field NodeSLO owns taken from `slo`; without a
    NodeSLO `in_force` (koordlet's defaults only) the GroupIdentity rule stays empty."""
    be = slo.cpu_qos(KoordQoSClass.BE)
    threshold = slo.resource_used_threshold_with_be
    cfs_quota_suppress = threshold.enable and threshold.cpu_suppress_policy is CPUSuppressPolicy.CFS_QUOTA
    return dataclasses.replace(
        base,
        bvt=MappingProxyType(slo.group_identities() if in_force else {}),
        bvt_by_tier=MappingProxyType(bvt_by_tier(slo) if in_force else {}),
        be_cpu_idle=be is not None and be.enable and be.sched_idle == 1,
        enable_cfs_quota=not cfs_quota_suppress,
    )


def hook_config_with_suppress(config: HookConfig, suppress: BESuppress) -> HookConfig:
    return config if config.be_suppress == suppress else dataclasses.replace(config, be_suppress=suppress)
