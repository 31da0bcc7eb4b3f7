"""Katalyst's realtime overcommit ratio (sysadvisor plugin `overcommit_aware`) and the
CustomNodeResource annotations that carry it. Pure.

Per resource (katalyst-core pkg/agent/sysadvisor/plugin/overcommitmentaware/realtime):

    load  = max(min(usage / request, 1), estimatedPodLoad)
    ratio = max(1, ((allocatable x targetLoad - usage) / load + request) / allocatable)

with allocatable, request and usage in one unit (milli-cores, bytes). The ratio says how
far requests may grow if new pods load the node like the present ones do, until the node
sits at its target load. Defined cases: allocatable or request zero (or below) -> 1.0, as
Katalyst; any NaN or infinite input -> 1.0 (Katalyst would publish NaN: `NaN < 1` is
false), and so does a ratio that overflows; usage below zero counts as zero.

Defaults: the seed deployment's values, CPU target 0.6 / estimated 0.4 and memory target
0.6 / estimated 0.6 (Katalyst's helm chart documents the same). Katalyst's code
defaults memory to target 0.8 / estimated 0.8
(cmd/katalyst-agent/app/options/sysadvisor/overcommit/realtime); pass those flags to get
Katalyst's own behaviour.

A ratio configured on the node (annotation katalyst.kubewharf.io/cpu_overcommit_ratio,
written by the overcommit controller from NodeOvercommitConfig) caps the reported one, as
Katalyst's GetOvercommitRatio does. Katalyst reports 1.0 when the node has no such
annotation; we report the computed ratio then (the controller takes min(configured,
realtime) anyway, and a standalone node has no controller).

allocatable is the Node's status.allocatable when the informer knows it, else its capacity,
else the host's online CPUs x 1000 and MemTotal (Katalyst: cores x 1000 - kubelet's reserved
CPU, memory capacity - reserved memory, refreshed hourly).

guaranteed_cpus is not subtracted here: Katalyst's controller does that
(`(allocatable - guaranteed) x ratio + guaranteed`); the agent reports it beside the
ratios, "0" when the CPU manager policy is none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from koordlet.apis import keys

CPU_RATIO_KEY = keys.KCNR_CPU_OVERCOMMIT_RATIO
MEMORY_RATIO_KEY = keys.KCNR_MEMORY_OVERCOMMIT_RATIO
GUARANTEED_CPUS_KEY = keys.KCNR_GUARANTEED_CPUS
CPU_MANAGER_KEY = keys.KCNR_OVERCOMMIT_CPU_MANAGER
MEMORY_MANAGER_KEY = keys.KCNR_OVERCOMMIT_MEMORY_MANAGER
ANNOTATION_KEYS = (CPU_RATIO_KEY, MEMORY_RATIO_KEY, GUARANTEED_CPUS_KEY, CPU_MANAGER_KEY, MEMORY_MANAGER_KEY)

# kubelet's policy names as Katalyst reports them: CPU "none"/"static", memory "None"/"Static".
CPU_MANAGER_NONE = "none"
MEMORY_MANAGER_NONE = "None"


@dataclass(frozen=True, slots=True)
class LoadTargets:
    target_load: float  # the node load the ratio aims at (0..1]
    estimated_pod_load: float  # the least load a pod is assumed to bring (0..1]

    def __post_init__(self) -> None:
        for name in ("target_load", "estimated_pod_load"):
            value = getattr(self, name)
            if not (0 < value <= 1):
                raise ValueError("%s must be in (0, 1], got %r" % (name, value))


SEED_CPU = LoadTargets(0.6, 0.4)
SEED_MEMORY = LoadTargets(0.6, 0.6)
KATALYST_CODE_MEMORY = LoadTargets(0.8, 0.8)


def overcommit_ratio(allocatable: float, request: float, usage: float, targets: LoadTargets) -> float:
    """The realtime ratio for one resource; always finite and >= 1 (see module doc)."""
    if not all(math.isfinite(v) for v in (allocatable, request, usage)):
        return 1.0
    if allocatable <= 0 or request <= 0:
        return 1.0
    usage = max(usage, 0.0)
    load = max(min(usage / request, 1.0), targets.estimated_pod_load)
    ratio = ((allocatable * targets.target_load - usage) / load + request) / allocatable
    if not math.isfinite(ratio):  # overflow from absurd magnitudes (requests 1e300 times allocatable)
        return 1.0
    return max(ratio, 1.0)


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """What the advisor reads each round: allocatable, Σ requests and Σ usage of the pods."""

    allocatable_milli_cpu: float
    allocatable_memory: float
    request_milli_cpu: float
    request_memory: float
    usage_milli_cpu: float
    usage_memory: float


@dataclass(frozen=True, slots=True)
class OvercommitResult:
    cpu_ratio: float
    memory_ratio: float
    guaranteed_cpus: int
    cpu_manager_policy: str
    memory_manager_policy: str

    def annotations(self) -> dict[str, str]:
        """The KCNR annotations, formatted as Katalyst's reporter formats them ("%.2f")."""
        return {
            CPU_RATIO_KEY: "%.2f" % self.cpu_ratio,
            MEMORY_RATIO_KEY: "%.2f" % self.memory_ratio,
            GUARANTEED_CPUS_KEY: str(self.guaranteed_cpus if self.cpu_manager_policy != CPU_MANAGER_NONE else 0),
            CPU_MANAGER_KEY: self.cpu_manager_policy,
            MEMORY_MANAGER_KEY: self.memory_manager_policy,
        }


def configured_cap(node_annotations: Mapping[str, str], key: str) -> float | None:
    """The ratio configured on the node, or None when absent or not a number >= 0."""
    text = node_annotations.get(key)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def advise(load: NodeLoad, cpu: LoadTargets, memory: LoadTargets, node_annotations: Mapping[str, str],
           guaranteed_cpus: int, cpu_manager_policy: str, memory_manager_policy: str) -> OvercommitResult:
    cpu_ratio = overcommit_ratio(load.allocatable_milli_cpu, load.request_milli_cpu, load.usage_milli_cpu, cpu)
    memory_ratio = overcommit_ratio(load.allocatable_memory, load.request_memory, load.usage_memory, memory)
    cpu_cap = configured_cap(node_annotations, CPU_RATIO_KEY)
    memory_cap = configured_cap(node_annotations, MEMORY_RATIO_KEY)
    if cpu_cap is not None:
        cpu_ratio = max(min(cpu_ratio, cpu_cap), 1.0)
    if memory_cap is not None:
        memory_ratio = max(min(memory_ratio, memory_cap), 1.0)
    return OvercommitResult(cpu_ratio, memory_ratio, guaranteed_cpus, cpu_manager_policy, memory_manager_policy)
