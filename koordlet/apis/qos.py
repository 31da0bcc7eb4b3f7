"""The QoS vocabulary every agent shares: the classes, bands and levels pods carry, the one
Kubernetes QoS tier enum, a pod's resolved QoS facts, and the predicates on them.

The Kubernetes tier is `system.cgroup_layout.QoSTier` (the kernel-facing layout names its
dirs after it); `kube_tier_of` / `kube_tier_name` convert Kubernetes' own spelling
("Guaranteed", "Burstable", "BestEffort").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Mapping

from system.cgroup_layout import QoSTier


class KoordQoSClass(Enum):
    """Koordinator's QoS class (label koordinator.sh/qosClass). NONE: no valid label."""

    LSE = "LSE"
    LSR = "LSR"
    LS = "LS"
    BE = "BE"
    SYSTEM = "SYSTEM"
    NONE = ""


class PriorityBand(Enum):
    """Koordinator's priority classes by spec.priority range."""

    PROD = "koord-prod"    # 9000-9999
    MID = "koord-mid"      # 7000-7999
    BATCH = "koord-batch"  # 5000-5999
    FREE = "koord-free"    # 3000-3999
    NONE = ""


class KatalystQoSLevel(Enum):
    """Katalyst's annotation katalyst.kubewharf.io/qos_level."""

    DEDICATED_CORES = "dedicated_cores"
    SHARED_CORES = "shared_cores"
    RECLAIMED_CORES = "reclaimed_cores"
    SYSTEM_CORES = "system_cores"


_KUBE_NAMES: Mapping[QoSTier, str] = MappingProxyType({
    QoSTier.GUARANTEED: "Guaranteed", QoSTier.BURSTABLE: "Burstable", QoSTier.BESTEFFORT: "BestEffort"})
_KUBE_TIERS: Mapping[str, QoSTier] = MappingProxyType({name: tier for tier, name in _KUBE_NAMES.items()})


def kube_tier_of(name: str) -> QoSTier | None:
    """The tier of Kubernetes' spelling (a pod's status.qosClass); None for anything else."""
    return _KUBE_TIERS.get(name)


def kube_tier_name(tier: QoSTier) -> str:
    """Kubernetes' spelling of a tier (what QRM plugins get as native_qos_class)."""
    return _KUBE_NAMES[tier]


def _empty() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PodQoS:
    """Every QoS fact about a pod, and the one class the policy acts on.

    `effective` is what the hooks, QoS strategies and reports use: the Koordinator
    class when the pod has one, else the class its Katalyst level or priority band
    or Kubernetes tier implies (the resolution rule lives in statesinformer/qos.py).
    """

    effective: KoordQoSClass
    koord: KoordQoSClass = KoordQoSClass.NONE
    band: PriorityBand = PriorityBand.NONE
    katalyst: KatalystQoSLevel | None = None
    k8s: QoSTier | None = None
    # Katalyst's memory_enhancement / cpu_enhancement annotations, parsed JSON objects
    # flattened to strings ({"numa_binding": "true", "numa_exclusive": "true"}).
    memory_enhancement: Mapping[str, str] = field(default_factory=_empty)
    cpu_enhancement: Mapping[str, str] = field(default_factory=_empty)

    @property
    def numa_binding(self) -> bool:
        return self.memory_enhancement.get("numa_binding") == "true"

    @property
    def numa_exclusive(self) -> bool:
        return self.memory_enhancement.get("numa_exclusive") == "true"


class CpuBinding(Enum):
    """How a pod's own CPUs may be shared."""

    EXCLUSIVE = "exclusive"  # LSE, Katalyst dedicated_cores: nobody else, BE included
    RESERVED = "reserved"  # LSR: no other LS pod; BE may run there


def cpu_binding(qos: PodQoS) -> CpuBinding | None:
    """Whether the pod's class binds it to CPUs of its own, and how: the one rule the runtime
    hooks and the ORM share. Koordinator binds LSE and LSR pods (koord-scheduler writes their
    cpuset), Katalyst binds dedicated_cores pods (which resolve to LSE or LSR anyway); every
    other class runs on the shared pool."""
    if qos.effective is KoordQoSClass.LSE or qos.katalyst is KatalystQoSLevel.DEDICATED_CORES:
        return CpuBinding.EXCLUSIVE
    if qos.effective is KoordQoSClass.LSR:
        return CpuBinding.RESERVED
    return None
