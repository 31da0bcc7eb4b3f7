"""BatchResource: cgroups of BE pods from their batch resources.

cpu.shares from the milli-CPU request (x1024/1000, at least 2), CFS quota from
the limit (x period/1000, at least 1000 us, -1 when unlimited or when the rule
disables quota; never above the BE tier's quota while CPU suppress limits it, which
cgroup v1 refuses), memory limit from the limit (-1 when unlimited). Pod level is
the sum over containers; one unlimited container makes the pod unlimited.
Requests and limits come from the extended-resource-spec annotation, else from
the kubelet spec. `extended_spec` also serves Katalyst's reclaimed resources.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from koordlet.apis.keys import BATCH_CPU, BATCH_MEMORY, EXTENDED_RESOURCE_SPEC
from koordlet.apis.qos import KatalystQoSLevel, KoordQoSClass
from koordlet.ports.be_suppress import quota_under_tier
from koordlet.runtimehooks.allocations import CpuAllocations
from koordlet.runtimehooks.annotations import AnnotationError, extended_resource_spec
from koordlet.runtimehooks.hook_config import (
    CFS_QUOTA_MIN_US,
    CPU_SHARES_MAX,
    CPU_SHARES_MIN,
    CPU_SHARES_PER_CORE,
    HookConfig,
)
from koordlet.runtimehooks.spec import EMPTY_SPEC, ResourceSpec
from koordlet.statesinformer.model import ContainerInfo, PodInfo, Resources, Source


def _positive(values: Mapping[str, int], name: str) -> int | None:
    value = values.get(name)
    return value if value is not None and value > 0 else None


def _shares(milli_request: int) -> int:
    return min(max(milli_request * CPU_SHARES_PER_CORE // 1000, CPU_SHARES_MIN), CPU_SHARES_MAX)


def _quota(milli_limit: int | None, config: HookConfig) -> int:
    if not config.enable_cfs_quota or milli_limit is None:
        return -1
    quota = milli_limit * config.cfs_period_us // 1000
    return -1 if quota <= 0 else max(quota, CFS_QUOTA_MIN_US)


def container_resources(pod: PodInfo, container: ContainerInfo) -> Resources | None:
    """The annotation's entry for this container when the annotation is there, else the kubelet spec."""
    try:
        spec = extended_resource_spec(pod.annotations)
    except AnnotationError:
        spec = None
    if spec is not None:
        return spec.get(container.name)
    return container.spec


def named(pod: PodInfo) -> frozenset[str] | None:
    """A container the runtime announces (no kubelet spec) is sized by its name's entry
    in the annotation: the names the annotation lists differ, every other name is sized
    alike (as without the annotation). An annotation that does not parse: any name may."""
    if EXTENDED_RESOURCE_SPEC not in pod.annotations:
        return frozenset()
    try:
        spec = extended_resource_spec(pod.annotations)
    except AnnotationError:
        return None
    return frozenset(spec or ())


def pod_resources(pod: PodInfo) -> Sequence[Resources] | None:
    """Every container's resources, or None when they are not all known.

    The kubelet spec counts only when kubelet gave the full pod: from NRI or
    CRI alone the containers not created yet are missing, and a partial sum
    would set a pod limit below what the pod needs."""
    try:
        spec = extended_resource_spec(pod.annotations)
    except AnnotationError:
        spec = None
    if spec is not None:
        return list(spec.values()) or None
    if Source.KUBELET not in pod.sources or not pod.containers:
        return None
    specs = [c.spec for c in pod.containers]
    return None if any(s is None for s in specs) else specs  # type: ignore[return-value]


def extended_spec(pod: PodInfo, container: ContainerInfo | None, config: HookConfig,
                  cpu_name: str, memory_name: str) -> ResourceSpec:
    """Shares, quota and memory limit from the extended resources `cpu_name` / `memory_name`."""
    if container is not None:
        resources = container_resources(pod, container)
        if resources is None:
            return EMPTY_SPEC
        limit = _positive(resources.limits, memory_name)
        return ResourceSpec(
            cpu_shares=_shares(_positive(resources.requests, cpu_name) or 0),
            cfs_quota=_quota(_positive(resources.limits, cpu_name), config),
            memory_limit=limit if limit is not None else -1,
        )
    every = pod_resources(pod)
    if every is None:
        return EMPTY_SPEC
    request = sum(_positive(r.requests, cpu_name) or 0 for r in every)
    cpu_limits = [_positive(r.limits, cpu_name) for r in every]
    memory_limits = [_positive(r.limits, memory_name) for r in every]
    return ResourceSpec(
        cpu_shares=_shares(request),
        cfs_quota=_quota(None if None in cpu_limits else sum(cpu_limits), config),  # type: ignore[arg-type]
        memory_limit=-1 if None in memory_limits else sum(memory_limits),  # type: ignore[arg-type]
    )


def decide(pod: PodInfo, container: ContainerInfo | None, config: HookConfig,
           allocations: CpuAllocations) -> ResourceSpec:
    # Katalyst reclaimed_cores pods are sized from their reclaimed resources instead.
    if pod.qos.effective is not KoordQoSClass.BE or pod.qos.katalyst is KatalystQoSLevel.RECLAIMED_CORES:
        return EMPTY_SPEC
    spec = extended_spec(pod, container, config, BATCH_CPU, BATCH_MEMORY)
    if spec.cfs_quota is None:
        return spec
    capped = quota_under_tier(spec.cfs_quota, config.be_suppress.cfs_quota_us)
    return spec if capped == spec.cfs_quota else dataclasses.replace(spec, cfs_quota=capped)
