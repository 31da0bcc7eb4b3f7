"""The hooks' rules from the NodeSLO in force and the BE suppress decision: pure functions.

koordlet semantics (runtimehooks groupidentity / batchresource rules):
- GroupIdentity: cpu.bvt_warp_ns per class is the class's cpuQOS.groupIdentity when its
  cpuQOS.enable is true, else 0 (koordlet's "none" CPU QoS resets it); LSE follows LSR.
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


def hook_config_from_slo(slo: NodeSLO, base: HookConfig) -> HookConfig:
    """`base` (host facts, CPUs) with every field NodeSLO owns taken from `slo`."""
    be = slo.cpu_qos(KoordQoSClass.BE)
    threshold = slo.resource_used_threshold_with_be
    cfs_quota_suppress = threshold.enable and threshold.cpu_suppress_policy is CPUSuppressPolicy.CFS_QUOTA
    return dataclasses.replace(
        base,
        bvt=MappingProxyType(slo.group_identities()),
        be_cpu_idle=be is not None and be.enable and be.sched_idle == 1,
        enable_cfs_quota=not cfs_quota_suppress,
    )


def hook_config_with_suppress(config: HookConfig, suppress: BESuppress) -> HookConfig:
    return config if config.be_suppress == suppress else dataclasses.replace(config, be_suppress=suppress)
