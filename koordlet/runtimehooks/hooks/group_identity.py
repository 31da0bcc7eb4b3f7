"""GroupIdentity: the pod cgroup's scheduling identity by QoS class.

cpu.bvt_warp_ns per class (the NodeSLO's groupIdentity: LSR/LS 2, BE -1 when enabled;
LSE counts as LSR; a pod of no class or SYSTEM takes its kube QoS tier's value) where
the kernel has it (Anolis), and cpu.idle=1 for BE pods on cgroup v2. Pod level only,
like koordlet: containers inherit their pod's identity. The kube-QoS directories get
the same values through `qos_dir_specs`. Nothing is written while no NodeSLO is in
force (no rule) or while the kernel's group identity switch could not be turned on.
"""

from __future__ import annotations

from typing import Mapping

from koordlet.apis.qos import KoordQoSClass
from koordlet.runtimehooks.allocations import CpuAllocations
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.runtimehooks.spec import EMPTY_SPEC, ResourceSpec
from koordlet.statesinformer.model import ContainerInfo, PodInfo
from system.cgroup_layout import QoSTier

_BVT_CLASS: Mapping[KoordQoSClass, KoordQoSClass] = {
    KoordQoSClass.LSE: KoordQoSClass.LSR,
    KoordQoSClass.LSR: KoordQoSClass.LSR,
    KoordQoSClass.LS: KoordQoSClass.LS,
    KoordQoSClass.BE: KoordQoSClass.BE,
}


def _bvt_on(config: HookConfig) -> bool:
    return config.host.bvt_supported and bool(config.bvt) and config.bvt_effective


def _bvt(pod: PodInfo, config: HookConfig) -> int | None:
    if not _bvt_on(config):
        return None
    as_class = _BVT_CLASS.get(pod.qos.effective)
    if as_class is not None:
        return config.bvt.get(as_class)
    return config.bvt_by_tier.get(pod.qos.k8s) if pod.qos.k8s is not None else None


def _idle(qos: KoordQoSClass, config: HookConfig) -> int | None:
    host = config.host
    if qos is KoordQoSClass.BE and config.be_cpu_idle and host.cpu_idle_supported and host.cgroup_version == 2:
        return 1
    return None


def decide(pod: PodInfo, container: ContainerInfo | None, config: HookConfig,
           allocations: CpuAllocations) -> ResourceSpec:
    if container is not None:
        return EMPTY_SPEC
    bvt, idle = _bvt(pod, config), _idle(pod.qos.effective, config)
    if bvt is None and idle is None:
        return EMPTY_SPEC
    return ResourceSpec(bvt=bvt, cpu_idle=idle)


# kubelet's QoS directories: besteffort as BE, burstable as LS; the guaranteed
# root (kubepods itself) stays 0, as koordlet keeps it until kernels support more.
_QOS_DIR_CLASS: Mapping[QoSTier, KoordQoSClass] = {QoSTier.BESTEFFORT: KoordQoSClass.BE, QoSTier.BURSTABLE: KoordQoSClass.LS}


def qos_dir_specs(config: HookConfig) -> dict[QoSTier, ResourceSpec]:
    """What each kube-QoS directory's cgroup must hold (only tiers with a decision)."""
    specs: dict[QoSTier, ResourceSpec] = {}
    for tier in QoSTier:
        qos = _QOS_DIR_CLASS.get(tier)
        bvt = ((config.bvt.get(qos) if qos is not None else 0) if _bvt_on(config) else None)
        idle = _idle(qos, config) if qos is not None else None
        if bvt is not None or idle is not None:
            specs[tier] = ResourceSpec(bvt=bvt, cpu_idle=idle)
    return specs
