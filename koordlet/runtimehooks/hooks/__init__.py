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


def _always(pod: PodInfo) -> bool:
    return True


def _never(pod: PodInfo) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Hook:
    name: str
    gate: str
    decide: HookFn
    # Whether a new container's decision (as the runtime announces it: a name, no kubelet
    # spec) depends on its name in this pod; False lets one decision serve the pod's new
    # containers. An allocator answering per container is the engine's to rule out.
    by_name: Callable[[PodInfo], bool] = _always


HOOKS: tuple[Hook, ...] = (
    Hook("BatchResource", "BatchResource", batch_resource.decide, batch_resource.by_name),
    # Katalyst's reclaimed-resource map is BatchResource for reclaimed_cores pods: same gate.
    Hook("ReclaimedResource", "BatchResource", reclaimed_resource.decide, batch_resource.by_name),
    Hook("CPUSetAllocator", "CPUSetAllocator", cpuset_allocator.decide, _never),
    Hook("GroupIdentity", "GroupIdentity", group_identity.decide, _never),
)


def enabled_hooks(enabled: Callable[[str], bool]) -> tuple[Hook, ...]:
    return tuple(hook for hook in HOOKS if enabled(hook.gate))
