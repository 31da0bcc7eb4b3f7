"""The policy: every enabled hook's partial spec, combined, for a pod and its containers.

Pure functions over the states informer's values; both transports call them.
"""

from __future__ import annotations

from typing import Callable, Sequence

from koordlet.runtimehooks.allocations import CpuAllocations
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.runtimehooks.hooks import Hook
from koordlet.runtimehooks.spec import ContainerPlan, PodPlan, ResourceSpec, combine
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodInfo


def decide(pod: PodInfo, container: ContainerInfo | None, config: HookConfig,
           allocations: CpuAllocations, hooks: Sequence[Hook]) -> ResourceSpec:
    """The spec of one container (or of the pod's own cgroup when `container` is None)."""
    return combine(hook.decide(pod, container, config, allocations) for hook in hooks)


def plan_with(pod: PodInfo, decide_one: Callable[[PodInfo, ContainerInfo | None], ResourceSpec]) -> PodPlan:
    """The pod's spec and each live container's (exited ones need nothing)."""
    containers = tuple(ContainerPlan(c.name, c.id, c.cgroup_dir, decide_one(pod, c))
                       for c in pod.containers if c.state is not ContainerState.EXITED)
    return PodPlan(pod.uid, pod.namespace, pod.name, pod.qos.effective, pod.cgroup_parent,
                   decide_one(pod, None), containers)


def plan_pod(pod: PodInfo, config: HookConfig, allocations: CpuAllocations,
             hooks: Sequence[Hook]) -> PodPlan:
    return plan_with(pod, lambda p, c: decide(p, c, config, allocations, hooks))
