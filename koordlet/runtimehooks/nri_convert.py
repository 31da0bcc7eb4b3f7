"""A ResourceSpec as NRI messages: a ContainerAdjustment at creation, a
ContainerUpdate later. Only the fields the spec owns are set (two plugins setting
one field fail the container in containerd). OCI has no field for bvt or
cpu.idle: on cgroup v2 they travel in the `unified` map, on v1 the reconciler
writes them. `unified` itself is cgroup-v2-only (runc refuses it on v1).
"""

from __future__ import annotations

from typing import Callable

from koordlet.runtimehooks.spec import ResourceSpec
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from system.cpuset import format_cpuset


def _unified(spec: ResourceSpec, cgroup_version: int) -> dict[str, str]:
    if cgroup_version != 2:
        return {}
    extra = dict(spec.unified)
    if spec.cpu_idle is not None:
        extra.setdefault("cpu.idle", str(spec.cpu_idle))
    return extra


CpuList = Callable[[frozenset[int]], str]


def fill_resources(target: api.LinuxResources, spec: ResourceSpec, cgroup_version: int,
                   cpu_list: CpuList = format_cpuset) -> bool:
    """Set the owned fields on `target`; False when the spec has nothing NRI can carry."""
    touched = False
    if spec.cpu_shares is not None:
        target.cpu.shares.value = spec.cpu_shares
        touched = True
    if spec.cfs_quota is not None:
        target.cpu.quota.value = spec.cfs_quota
        touched = True
    if spec.cfs_period is not None:
        target.cpu.period.value = spec.cfs_period
        touched = True
    if spec.cpuset_cpus is not None:
        target.cpu.cpus = cpu_list(spec.cpuset_cpus)
        touched = True
    if spec.cpuset_mems is not None:
        target.cpu.mems = cpu_list(spec.cpuset_mems)
        touched = True
    if spec.memory_limit is not None:
        target.memory.limit.value = spec.memory_limit
        touched = True
    for key, value in _unified(spec, cgroup_version).items():
        target.unified[key] = value
        touched = True
    return touched


def adjustment(spec: ResourceSpec, cgroup_version: int,
               cpu_list: CpuList = format_cpuset) -> api.ContainerAdjustment | None:
    adjust = api.ContainerAdjustment()
    return adjust if fill_resources(adjust.linux.resources, spec, cgroup_version, cpu_list) else None


def update(container_id: str, spec: ResourceSpec, cgroup_version: int,
           cpu_list: CpuList = format_cpuset) -> api.ContainerUpdate | None:
    message = api.ContainerUpdate(container_id=container_id, ignore_failure=True)
    return message if fill_resources(message.linux.resources, spec, cgroup_version, cpu_list) else None


def holds(current: api.LinuxResources, spec: ResourceSpec, cgroup_version: int,
          cpu_list: CpuList = format_cpuset) -> bool:
    """Whether the runtime's view of a container already holds every owned field."""
    wanted = api.LinuxResources()
    fill_resources(wanted, spec, cgroup_version, cpu_list)
    merged = api.LinuxResources()
    merged.CopyFrom(current)
    merged.MergeFrom(wanted)
    if spec.cpuset_cpus is not None:
        merged.cpu.cpus = wanted.cpu.cpus
    if spec.cpuset_mems is not None:
        merged.cpu.mems = wanted.cpu.mems
    return merged == current
