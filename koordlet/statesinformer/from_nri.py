"""NRI messages (proto nri.pkg.api.v1alpha1) -> the informer's values. Pure.

cgroup parents and paths come in the runtime's spelling (cgroupfs path or systemd
"slice:prefix:name") and leave as directories relative to a controller mount.
"""

from __future__ import annotations

from operator import methodcaller
from sys import intern
from types import MappingProxyType
from typing import Callable, Mapping

from google.protobuf.message import Message

from koordlet.statesinformer.model import (
    MAIN_ROLE,
    ContainerInfo,
    ContainerState,
    LinuxResources,
    Resources,
    SandboxState,
    Source,
    new_container_info,
    shared_linux_resources,
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


_UNKNOWN = ContainerState.UNKNOWN  # see model.ContainerState


def container_state(state: int) -> ContainerState:
    return _STATE.get(state, _UNKNOWN)


def _deterministic_serializer() -> Callable[[Message], bytes]:
    """message -> its serialization with map entries in key order. upb takes the flag by position,
    at a fraction of what a keyword costs (~1 us a sandbox); the pure-Python protobuf by keyword only."""
    by_position = methodcaller("SerializeToString", True)
    try:
        by_position(api_pb2.LinuxResources())
    except TypeError:
        return methodcaller("SerializeToString", deterministic=True)
    return by_position


deterministic_bytes = _deterministic_serializer()


# converted LinuxResources by their message's bytes: reading a message field by field costs ~2 us,
# serializing one (~40 bytes) a fifth of that, and pods of one shape ask alike; cleared when it
# outgrows this. Sorted map keys: the same unified map in another order is the same ask
_LINUX_BY_MESSAGE_MAX = 1024
_linux_by_message: dict[bytes, LinuxResources] = {}


def linux_resources(resources: api_pb2.LinuxResources) -> LinuxResources:
    """NRI LinuxResources -> LinuxResources; an unset optional stays None."""
    message = deterministic_bytes(resources)
    known = _linux_by_message.get(message)
    if known is None:
        if len(_linux_by_message) >= _LINUX_BY_MESSAGE_MAX:
            _linux_by_message.clear()
        known = _linux_by_message[message] = _read_linux_resources(resources)
    return known


def _read_linux_resources(resources: api_pb2.LinuxResources) -> LinuxResources:
    cpu, memory = resources.cpu, resources.memory
    values = (
        cpu.shares.value if cpu.HasField("shares") else None,
        cpu.quota.value if cpu.HasField("quota") else None,
        cpu.period.value if cpu.HasField("period") else None,
        cpu.cpus or None,
        cpu.mems or None,
        memory.limit.value if memory.HasField("limit") else None,
    )
    if resources.unified:
        return LinuxResources(*values, unified=MappingProxyType(dict(resources.unified)))
    return shared_linux_resources(values)


def _interned(table: Mapping[str, str]) -> Mapping[str, str]:
    """A protobuf map as a read-only dict of interned strings: every pod carries the same keys
    and many of the same values (namespace, runtime, QoS class), held once per node this way."""
    return MappingProxyType({intern(key): intern(value) for key, value in table.items()})


def sandbox_view(sandbox: api_pb2.PodSandbox) -> SandboxView:
    """An NRI PodSandbox as a pod without containers (state READY: NRI reports live sandboxes)."""
    problems: list[InputProblem] = []
    parent = checked_cgroup_dir(sandbox.linux.cgroup_parent, "linux.cgroup_parent", problems)
    facts = SandboxFacts(  # interned: the same strings are label and annotation values of the pod
        uid=intern(sandbox.uid),
        name=intern(sandbox.name),
        namespace=intern(sandbox.namespace),
        sandbox_id=intern(sandbox.id),
        state=SandboxState.READY,
        cgroup_parent=parent,
        labels=_interned(sandbox.labels),
        annotations=_interned(sandbox.annotations),
        source=Source.NRI,
    )
    return build_view(facts, tuple(problems))


def container_info(
    container: api_pb2.Container, pod_uid: str, spec: Resources | None = None, *,
    linux: LinuxResources | None = None, state: ContainerState | None = None,
) -> tuple[ContainerInfo, tuple[InputProblem, ...]]:
    """An NRI Container; `spec` is its entry in the pod's extended-resource-spec, if any;
    `linux`: the resources to keep instead of converting the message's (see PodStore.nri_container);
    `state`: what the event says over the message's own state."""
    problems: list[InputProblem] = []
    directory = checked_cgroup_dir(container.linux.cgroups_path, "linux.cgroups_path", problems)
    info = new_container_info(
        container.id,
        intern(container.name),
        pod_uid,
        container_state(container.state) if state is None else state,
        directory,
        linux_resources(container.linux.resources) if linux is None else linux,
        spec,
        container.pid or None,
        container.created_at,
        MAIN_ROLE,
    )
    return info, tuple(problems)


def known_container_info(
    container: api_pb2.Container, pod_uid: str, known: ContainerInfo, state: ContainerState | None,
) -> tuple[ContainerInfo, tuple[InputProblem, ...]]:
    """container_info(container, pod_uid, linux=known.linux, state=state) for the container the store
    holds under the message's id as `known` (as NRI reported it: no spec, the default role): `known`
    itself, or it with the new state, when the message repeats what it holds, as nearly every event
    does; no new value then."""
    problems: list[InputProblem] = []
    directory = checked_cgroup_dir(container.linux.cgroups_path, "linux.cgroups_path", problems)
    if (problems or directory != known.cgroup_dir or container.name != known.name
            or pod_uid != known.pod_uid or (container.pid or None) != known.pid
            or container.created_at != known.created_at_ns or known.spec is not None or known.role is not MAIN_ROLE):
        return container_info(container, pod_uid, linux=known.linux, state=state)
    new_state = container_state(container.state) if state is None else state
    return (known if new_state is known.state else known.with_state(new_state)), ()
