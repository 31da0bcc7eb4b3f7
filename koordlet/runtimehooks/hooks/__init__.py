"""The hooks, one module each, and the order they run in (the first to set a field owns it).

Each hook is a pure function `(pod, container | None, config, allocations) -> ResourceSpec`
(container None: the pod's own cgroup) switched by the feature gate named beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from koordlet.runtimehooks.allocations import CpuAllocations
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.runtimehooks.hooks import batch_resource, cpuset_allocator, group_identity, reclaimed_resource
from koordlet.runtimehooks.spec import ResourceSpec
from koordlet.statesinformer.model import ContainerInfo, PodInfo

HookFn = Callable[[PodInfo, "ContainerInfo | None", HookConfig, CpuAllocations], ResourceSpec]


def _every_name(pod: PodInfo) -> frozenset[str] | None:
    return None


def _no_name(pod: PodInfo) -> frozenset[str] | None:
    return frozenset()


@dataclass(frozen=True, slots=True)
class Hook:
    name: str
    gate: str
    decide: HookFn
    # The container names whose decision (as the runtime announces a container: a name, no
    # kubelet spec) may differ from an unnamed one's in this pod; every other name shares
    # that one decision. None: any name may differ. An allocator answering per container
    # is the engine's to rule out.
    named: Callable[[PodInfo], frozenset[str] | None] = _every_name


HOOKS: tuple[Hook, ...] = (
    Hook("BatchResource", "BatchResource", batch_resource.decide, batch_resource.named),
    # Katalyst's reclaimed-resource map is BatchResource for reclaimed_cores pods: same gate.
    Hook("ReclaimedResource", "BatchResource", reclaimed_resource.decide, batch_resource.named),
    Hook("CPUSetAllocator", "CPUSetAllocator", cpuset_allocator.decide, _no_name),
    Hook("GroupIdentity", "GroupIdentity", group_identity.decide, _no_name),
)


def enabled_hooks(enabled: Callable[[str], bool]) -> tuple[Hook, ...]:
    return tuple(hook for hook in HOOKS if enabled(hook.gate))
