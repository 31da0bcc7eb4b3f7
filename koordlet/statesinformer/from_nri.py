"""NRI messages (proto nri.pkg.api.v1alpha1) -> the informer's values. Pure.

cgroup parents and paths come in the runtime's spelling (cgroupfs path or systemd
"slice:prefix:name") and leave as directories relative to a controller mount.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from koordlet.statesinformer.model import (
    ContainerInfo,
    ContainerState,
    LinuxResources,
    Resources,
    SandboxState,
    Source,
)
from koordlet.statesinformer.problems import InputProblem
from koordlet.statesinformer.runtime_view import SandboxFacts, SandboxView, build_view, checked_cgroup_dir
from proto.nri.pkg.api.v1alpha1 import api_pb2

_STATE: dict[int, ContainerState] = {
    api_pb2.CONTAINER_UNKNOWN: ContainerState.UNKNOWN,
    api_pb2.CONTAINER_CREATED: ContainerState.CREATED,
    api_pb2.CONTAINER_PAUSED: ContainerState.RUNNING,  # frozen, but its cgroup lives on
    api_pb2.CONTAINER_RUNNING: ContainerState.RUNNING,
    api_pb2.CONTAINER_STOPPED: ContainerState.EXITED,
}


_NO_UNIFIED: Mapping[str, str] = MappingProxyType({})


def container_state(state: int) -> ContainerState:
    return _STATE.get(state, ContainerState.UNKNOWN)


def linux_resources(resources: api_pb2.LinuxResources) -> LinuxResources:
    """NRI LinuxResources -> LinuxResources; an unset optional stays None."""
    cpu, memory = resources.cpu, resources.memory
    return LinuxResources(
        cpu_shares=cpu.shares.value if cpu.HasField("shares") else None,
        cpu_quota=cpu.quota.value if cpu.HasField("quota") else None,
        cpu_period=cpu.period.value if cpu.HasField("period") else None,
        cpuset_cpus=cpu.cpus or None,
        cpuset_mems=cpu.mems or None,
        memory_limit=memory.limit.value if memory.HasField("limit") else None,
        unified=MappingProxyType(dict(resources.unified)) if resources.unified else _NO_UNIFIED,
    )


def sandbox_view(sandbox: api_pb2.PodSandbox) -> SandboxView:
    """An NRI PodSandbox as a pod without containers (state READY: NRI reports live sandboxes)."""
    problems: list[InputProblem] = []
    parent = checked_cgroup_dir(sandbox.linux.cgroup_parent, "linux.cgroup_parent", problems)
    facts = SandboxFacts(
        uid=sandbox.uid,
        name=sandbox.name,
        namespace=sandbox.namespace,
        sandbox_id=sandbox.id,
        state=SandboxState.READY,
        cgroup_parent=parent,
        labels=MappingProxyType(dict(sandbox.labels)),
        annotations=MappingProxyType(dict(sandbox.annotations)),
        source=Source.NRI,
    )
    return build_view(facts, tuple(problems))


def container_info(
    container: api_pb2.Container, pod_uid: str, spec: Resources | None = None
) -> tuple[ContainerInfo, tuple[InputProblem, ...]]:
    """An NRI Container; `spec` is its entry in the pod's extended-resource-spec, if any."""
    problems: list[InputProblem] = []
    directory = checked_cgroup_dir(container.linux.cgroups_path, "linux.cgroups_path", problems)
    info = ContainerInfo(
        id=container.id,
        name=container.name,
        pod_uid=pod_uid,
        state=container_state(container.state),
        cgroup_dir=directory,
        linux=linux_resources(container.linux.resources),
        spec=spec,
        pid=container.pid or None,
        created_at_ns=container.created_at,
    )
    return info, tuple(problems)
