"""CRI messages (proto runtime.v1) -> the informer's values. Pure.

CRI's listings do not carry cgroups; the verbose status calls do, inside the
runtime-specific JSON document under info["info"] (containerd: the sandbox's
"config.linux.cgroup_parent", and every object's OCI "runtimeSpec.linux.cgroupsPath"
and "pid"). Without them the container's dir is derived from the pod's, in
containerd's naming.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any, Mapping

from koordlet.statesinformer.model import (
    ContainerInfo,
    ContainerState,
    LinuxResources,
    PodInfo,
    SandboxState,
    Source,
)
from koordlet.statesinformer.problems import InputProblem
from koordlet.statesinformer.runtime_view import SandboxFacts, SandboxView, build_view, checked_cgroup_dir
from proto.cri import api_pb2

INFO_KEY = "info"

_CONTAINER_STATE: dict[int, ContainerState] = {
    api_pb2.CONTAINER_CREATED: ContainerState.CREATED,
    api_pb2.CONTAINER_RUNNING: ContainerState.RUNNING,
    api_pb2.CONTAINER_EXITED: ContainerState.EXITED,
    api_pb2.CONTAINER_UNKNOWN: ContainerState.UNKNOWN,
}


def container_state(state: int) -> ContainerState:
    return _CONTAINER_STATE.get(state, ContainerState.UNKNOWN)


def _info_document(info: Mapping[str, str], problems: list[InputProblem]) -> dict[str, Any]:
    text = info.get(INFO_KEY)
    if not text:
        return {}
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError) as exc:
        problems.append(InputProblem("status.info", text[:256], "invalid JSON: %s" % exc))
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _path(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def sandbox_cgroup_parent(info: Mapping[str, str], problems: list[InputProblem]) -> str:
    """The pod's cgroup dir from a verbose PodSandboxStatus info map ("" when absent)."""
    document = _info_document(info, problems)
    parent = checked_cgroup_dir(_path(document, "config", "linux", "cgroup_parent"), "config.linux.cgroup_parent", problems)
    if parent:
        return parent
    # older containerd: only the pause container's own cgroup, one level below the pod's
    own = checked_cgroup_dir(_path(document, "runtimeSpec", "linux", "cgroupsPath"), "runtimeSpec.linux.cgroupsPath", problems)
    return own.rsplit("/", 1)[0] if "/" in own else ""


def sandbox_view(sandbox: api_pb2.PodSandbox, status_info: Mapping[str, str]) -> SandboxView:
    """A listed sandbox plus the info map of its verbose status."""
    problems: list[InputProblem] = []
    ready = sandbox.state == api_pb2.SANDBOX_READY
    facts = SandboxFacts(
        uid=sandbox.metadata.uid,
        name=sandbox.metadata.name,
        namespace=sandbox.metadata.namespace,
        sandbox_id=sandbox.id,
        state=SandboxState.READY if ready else SandboxState.NOT_READY,
        cgroup_parent=sandbox_cgroup_parent(status_info, problems),
        labels=MappingProxyType(dict(sandbox.labels)),
        annotations=MappingProxyType(dict(sandbox.annotations)),
        source=Source.CRI,
        created_at_ns=sandbox.created_at,
    )
    return build_view(facts, tuple(problems))


def linux_resources(resources: api_pb2.LinuxContainerResources) -> LinuxResources:
    """CRI's LinuxContainerResources; CRI spells "not set" as 0 / ""."""
    return LinuxResources(
        cpu_shares=resources.cpu_shares or None,
        cpu_quota=resources.cpu_quota or None,
        cpu_period=resources.cpu_period or None,
        cpuset_cpus=resources.cpuset_cpus or None,
        cpuset_mems=resources.cpuset_mems or None,
        memory_limit=resources.memory_limit_in_bytes or None,
        unified=MappingProxyType(dict(resources.unified)),
    )


def derived_container_dir(pod_dir: str, container_id: str) -> str:
    """containerd's container cgroup below its pod's: a scope under a systemd slice, a
    plain dir otherwise."""
    if not pod_dir:
        return ""
    if pod_dir.endswith(".slice"):
        return "%s/cri-containerd-%s.scope" % (pod_dir, container_id)
    return "%s/%s" % (pod_dir, container_id)


def container_info(
    container: api_pb2.Container, pod: PodInfo, status: api_pb2.ContainerStatusResponse | None
) -> tuple[ContainerInfo, tuple[InputProblem, ...]]:
    """A listed container, with its verbose status when there is one."""
    problems: list[InputProblem] = []
    document = _info_document(status.info, problems) if status is not None else {}
    directory = checked_cgroup_dir(_path(document, "runtimeSpec", "linux", "cgroupsPath"), "runtimeSpec.linux.cgroupsPath", problems)
    pid = document.get("pid")
    linux = LinuxResources()
    if status is not None and status.status.resources.HasField("linux"):
        linux = linux_resources(status.status.resources.linux)
    info = ContainerInfo(
        id=container.id,
        name=container.metadata.name,
        pod_uid=pod.uid,
        state=container_state(container.state),
        cgroup_dir=directory or derived_container_dir(pod.cgroup_parent, container.id),
        linux=linux,
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
        created_at_ns=container.created_at,
    )
    return info, tuple(problems)
