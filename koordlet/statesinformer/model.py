"""What the states informer knows about the node's pods and containers.

Values only: frozen, hashable where it matters, no IO. The informer builds them
from NRI, CRI and (optionally) kubelet; every other agent reads them.

Units: CPU in milli-cores, memory in bytes (see koordlet.apis.quantity).
cgroup directories are relative to a controller's mount point, exactly as the
resource executor takes them ("kubepods/besteffort/pod<uid>/<container id>").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Mapping

from koordlet.apis.qos import PodQoS


def _empty_str() -> Mapping[str, str]:
    return MappingProxyType({})


def _empty_int() -> Mapping[str, int]:
    return MappingProxyType({})


class Source(Enum):
    """Where a fact came from. NRI and CRI see what the runtime runs; kubelet adds the spec."""

    NRI = "nri"
    CRI = "cri"
    KUBELET = "kubelet"


class SandboxState(Enum):
    """CRI PodSandboxState (SANDBOX_READY = 0, SANDBOX_NOTREADY = 1)."""

    READY = "ready"
    NOT_READY = "not_ready"


class ContainerState(Enum):
    """CRI ContainerState (CREATED = 0, RUNNING = 1, EXITED = 2, UNKNOWN = 3).

    The per-event code reads the members of this and the other Enums it tests from module
    globals (`_EXITED = ContainerState.EXITED`): read through its class, a member goes through
    EnumType's Python-level __getattr__ hook on 3.11, ~0.25 us a read."""

    CREATED = "created"
    RUNNING = "running"
    EXITED = "exited"
    UNKNOWN = "unknown"


class ContainerKind(Enum):
    """What the pod spec makes of a container (kubelet /pods; the runtime does not say).

    MAIN is the pod's main container (the annotation katalyst.kubewharf.io/main_container_name,
    else the first of spec.containers), SIDECAR any other long-lived one (the other app
    containers and init containers with restartPolicy Always), INIT an init container that
    runs to completion before the app containers start. Unknown kinds read as MAIN."""

    MAIN = "main"
    SIDECAR = "sidecar"
    INIT = "init"


@dataclass(frozen=True, slots=True)
class ContainerRole:
    """A container's kind and its index in the list the pod spec names it in
    (spec.initContainers when `in_init_list`, else spec.containers)."""

    kind: ContainerKind = ContainerKind.MAIN
    index: int = 0
    in_init_list: bool = False


MAIN_ROLE = ContainerRole()


@dataclass(frozen=True, slots=True)
class Resources:
    """Requests and limits by resource name ("cpu" in milli-cores, "memory" in bytes,
    extended resources in their base unit). A missing name means unset."""

    requests: Mapping[str, int] = field(default_factory=_empty_int)
    limits: Mapping[str, int] = field(default_factory=_empty_int)


@dataclass(frozen=True, slots=True)
class LinuxResources:
    """The container's Linux resources as the runtime holds them (NRI LinuxResources /
    CRI LinuxContainerResources): what kubelet asked for before any plugin changed it.
    None means the runtime did not say."""

    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    cpuset_cpus: str | None = None
    cpuset_mems: str | None = None
    memory_limit: int | None = None
    unified: Mapping[str, str] = field(default_factory=_empty_str)

    def overlaid(self, update: LinuxResources) -> LinuxResources:
        """A new ask over this one (kubelet's UpdateContainerResources): what the update sets
        wins, the rest (cpusets kubelet does not resize) stays."""
        values = (
            self.cpu_shares if update.cpu_shares is None else update.cpu_shares,
            self.cpu_quota if update.cpu_quota is None else update.cpu_quota,
            self.cpu_period if update.cpu_period is None else update.cpu_period,
            self.cpuset_cpus if update.cpuset_cpus is None else update.cpuset_cpus,
            self.cpuset_mems if update.cpuset_mems is None else update.cpuset_mems,
            self.memory_limit if update.memory_limit is None else update.memory_limit,
        )
        unified = update.unified or self.unified
        if unified == self.unified and values == (self.cpu_shares, self.cpu_quota, self.cpu_period,
                                                  self.cpuset_cpus, self.cpuset_mems, self.memory_limit):
            return self
        return LinuxResources(*values, unified=unified) if unified else shared_linux_resources(values)


# LinuxResources by value: pods of one shape ask alike, so the node's containers share a few
# values (less memory, and a frozen dataclass costs ~1 us to build); the least recently asked go
_SHARED_LINUX_MAX = 1024
# shares, quota, period, cpuset cpus, cpuset mems, memory limit
LinuxValues = tuple[int | None, int | None, int | None, str | None, str | None, int | None]
@lru_cache(maxsize=_SHARED_LINUX_MAX)
def shared_linux_resources(values: LinuxValues) -> LinuxResources:
    """LinuxResources(*values) without unified, one value shared by all who ask alike."""
    return LinuxResources(*values)


# overlaid() results by the pair's ids: containers of one shape hold one shared value and kubelet's
# asks are shared by message (from_nri.linux_resources), so a few pairs recur, and an overlay costs ~20
# field reads. An entry keeps its pair alive, so the ids stay theirs while it is kept; emptied when full
_OVERLAID_MAX = 1024
_overlaid_by_ids: dict[tuple[int, int], tuple[LinuxResources, LinuxResources, LinuxResources]] = {}


def overlaid(held: LinuxResources, ask: LinuxResources) -> LinuxResources:
    """held.overlaid(ask), kept by the pair (see _overlaid_by_ids)."""
    key = (id(held), id(ask))
    kept = _overlaid_by_ids.get(key)
    if kept is not None:
        return kept[2]
    if len(_overlaid_by_ids) >= _OVERLAID_MAX:
        _overlaid_by_ids.clear()
    made = held.overlaid(ask)
    _overlaid_by_ids[key] = (held, ask, made)
    return made


@dataclass(frozen=True, slots=True)
class ContainerInfo:
    id: str  # runtime container id
    name: str
    pod_uid: str
    state: ContainerState
    cgroup_dir: str  # relative to a controller mount; "" when not known yet
    linux: LinuxResources = field(default_factory=LinuxResources)
    spec: Resources | None = None  # requests/limits from kubelet or the extended-resource annotation
    pid: int | None = None
    created_at_ns: int = 0
    role: ContainerRole = MAIN_ROLE

    # dataclasses.replace costs several times a constructor call; these run on every NRI event
    def with_state(self, state: ContainerState) -> ContainerInfo:
        return new_container_info(self.id, self.name, self.pod_uid, state, self.cgroup_dir, self.linux, self.spec,
                                  self.pid, self.created_at_ns, self.role)

    def with_linux(self, linux: LinuxResources) -> ContainerInfo:
        return new_container_info(self.id, self.name, self.pod_uid, self.state, self.cgroup_dir, linux, self.spec,
                                  self.pid, self.created_at_ns, self.role)

    def with_spec(self, spec: Resources | None, role: ContainerRole) -> ContainerInfo:
        return new_container_info(self.id, self.name, self.pod_uid, self.state, self.cgroup_dir, self.linux, spec,
                                  self.pid, self.created_at_ns, role)


# A frozen dataclass's __init__ sets each field through object.__setattr__, ~5 us for a ContainerInfo
# here. The copies made on every NRI event (a changed container, its pod, the event) are filled as
# an instance of a builder class instead, a plain class with the same slots, whose slot stores are
# the cheapest write Python has; the filled instance then takes the frozen class as its own (the
# layouts are the same, so CPython allows it), in a quarter of the time
def _builder(cls: type) -> Any:
    return type(cls.__name__ + "Builder", (), {"__slots__": vars(cls)["__slots__"], "__module__": __name__})


_CONTAINER_INFO_BUILDER = _builder(ContainerInfo)


def new_container_info(container_id: str, name: str, pod_uid: str, state: ContainerState, cgroup_dir: str,
                       linux: LinuxResources, spec: Resources | None, pid: int | None, created_at_ns: int,
                       role: ContainerRole) -> ContainerInfo:
    """ContainerInfo(...) with every field given, built through _CONTAINER_INFO_BUILDER: for the
    converters, which make one per container event."""
    made = object.__new__(_CONTAINER_INFO_BUILDER)
    made.id = container_id
    made.name = name
    made.pod_uid = pod_uid
    made.state = state
    made.cgroup_dir = cgroup_dir
    made.linux = linux
    made.spec = spec
    made.pid = pid
    made.created_at_ns = created_at_ns
    made.role = role
    made.__class__ = ContainerInfo
    return made


@dataclass(frozen=True, slots=True)
class PodInfo:
    uid: str
    name: str
    namespace: str
    sandbox_id: str
    state: SandboxState
    cgroup_parent: str  # the pod's cgroup dir, relative to a controller mount
    qos: PodQoS
    labels: Mapping[str, str] = field(default_factory=_empty_str)
    annotations: Mapping[str, str] = field(default_factory=_empty_str)
    priority: int | None = None
    priority_class_name: str = ""
    containers: tuple[ContainerInfo, ...] = ()
    sources: frozenset[Source] = frozenset()
    created_at_ns: int = 0
    # running_containers, built on first use: every periodic pass asks each pod for it, and a
    # PodInfo never changes (replace() makes a new one with this reset)
    _running: tuple[ContainerInfo, ...] | None = field(default=None, init=False, repr=False,
                                                        compare=False, hash=False)

    def with_containers(self, containers: tuple[ContainerInfo, ...], sources: frozenset[Source]) -> PodInfo:
        """dataclasses.replace(self, containers=..., sources=...), at a fraction of its cost (see _builder)."""
        made = object.__new__(_POD_INFO_BUILDER)
        made.uid = self.uid
        made.name = self.name
        made.namespace = self.namespace
        made.sandbox_id = self.sandbox_id
        made.state = self.state
        made.cgroup_parent = self.cgroup_parent
        made.qos = self.qos
        made.labels = self.labels
        made.annotations = self.annotations
        made.priority = self.priority
        made.priority_class_name = self.priority_class_name
        made.containers = containers
        made.sources = sources
        made.created_at_ns = self.created_at_ns
        made._running = None
        made.__class__ = PodInfo
        return made

    def container(self, name: str) -> ContainerInfo | None:
        for container in self.containers:
            if container.name == name:
                return container
        return None

    def container_by_id(self, container_id: str) -> ContainerInfo | None:
        for container in self.containers:
            if container.id == container_id:
                return container
        return None

    @property
    def running_containers(self) -> tuple[ContainerInfo, ...]:
        running = self._running
        if running is None:
            running = tuple([c for c in self.containers if c.state is ContainerState.RUNNING])
            object.__setattr__(self, "_running", running)
        return running


_POD_INFO_BUILDER = _builder(PodInfo)


class PodEventKind(Enum):
    ADDED = "added"
    UPDATED = "updated"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class PodEvent:
    kind: PodEventKind
    pod: PodInfo  # for DELETED: the pod as it was last known
    previous: PodInfo | None = None  # for UPDATED: the pod before the change


_POD_EVENT_BUILDER = _builder(PodEvent)


def pod_event(kind: PodEventKind, pod: PodInfo, previous: PodInfo | None = None) -> PodEvent:
    """PodEvent(kind, pod, previous), built through _POD_EVENT_BUILDER (see _builder): one per change."""
    made = object.__new__(_POD_EVENT_BUILDER)
    made.kind = kind
    made.pod = pod
    made.previous = previous
    made.__class__ = PodEvent
    return made


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """The node as the agent sees it (standalone: from the host; in a cluster: plus the Node object)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=_empty_str)
    annotations: Mapping[str, str] = field(default_factory=_empty_str)
    capacity: Mapping[str, int] = field(default_factory=_empty_int)
    allocatable: Mapping[str, int] = field(default_factory=_empty_int)
