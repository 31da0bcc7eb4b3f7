"""What the policy says a cgroup must hold: one value type for pods and containers.

A `ResourceSpec` names only the fields the policy owns; None means "not ours,
leave it as the runtime or kubelet set it". Both transports read the same value:
NRI turns it into a ContainerAdjustment / ContainerUpdate, the reconciler into
executor updaters. Units are the kernel's: shares, microseconds, bytes, cpu ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from koordlet.apis.qos import KoordQoSClass
from system.cpuset import format_cpuset

# Read-only over a dict nobody else holds, so one is enough for every spec without
# cgroup-v2-only files: ~4,500 specs at 1,000 pods each made its own (a dict and a proxy).
_NO_UNIFIED: Mapping[str, str] = MappingProxyType({})


def _empty() -> Mapping[str, str]:
    return _NO_UNIFIED


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    cpu_shares: int | None = None
    cfs_quota: int | None = None  # -1 = unlimited
    cfs_period: int | None = None
    memory_limit: int | None = None  # -1 = unlimited
    cpuset_cpus: frozenset[int] | None = None
    cpuset_mems: frozenset[int] | None = None
    bvt: int | None = None  # cpu.bvt_warp_ns (group identity, Anolis kernels)
    cpu_idle: int | None = None  # cpu.idle (SCHED_IDLE group)
    # cgroup-v2-only files by name; left out of the hash (a mapping has none), not of ==
    unified: Mapping[str, str] = field(default_factory=_empty, hash=False)

    @property
    def empty(self) -> bool:
        return self == EMPTY_SPEC

    def merged(self, other: ResourceSpec) -> ResourceSpec:
        """Field-wise: this spec's fields win, `other` fills the rest."""
        # hooks answer "nothing" with the EMPTY_SPEC singleton: identity is the cheap test
        if other is EMPTY_SPEC:
            return self
        if self is EMPTY_SPEC:
            return other
        values = {name: mine if (mine := getattr(self, name)) is not None else getattr(other, name)
                  for name in _SCALAR_FIELDS}
        unified = MappingProxyType({**other.unified, **self.unified}) if other.unified else self.unified
        return ResourceSpec(**values, unified=unified)

    def to_json(self) -> dict[str, Any]:
        """Only the owned fields, cpu lists in kernel syntax (for /api/v1/pods and logs)."""
        out: dict[str, Any] = {}
        for name in _SCALAR_FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            out[name] = format_cpuset(value) if isinstance(value, frozenset) else value
        if self.unified:
            out["unified"] = dict(self.unified)
        return out


_SCALAR_FIELDS = tuple(f.name for f in fields(ResourceSpec) if f.name != "unified")
EMPTY_SPEC = ResourceSpec()


def combine(parts: Iterable[ResourceSpec]) -> ResourceSpec:
    """Combine hook outputs in hook order: the first hook to set a field owns it."""
    result = EMPTY_SPEC
    for part in parts:
        result = result.merged(part)
    return result


@dataclass(frozen=True, slots=True)
class ContainerPlan:
    """The decision for one container of a pod."""

    name: str
    container_id: str
    cgroup_dir: str
    spec: ResourceSpec


@dataclass(frozen=True, slots=True)
class PodPlan:
    """The decision for a pod: its own cgroup and each known container's."""

    uid: str
    namespace: str
    name: str
    qos: KoordQoSClass
    cgroup_dir: str
    spec: ResourceSpec
    containers: tuple[ContainerPlan, ...] = ()

    def container(self, name: str) -> ContainerPlan | None:
        for plan in self.containers:
            if plan.name == name:
                return plan
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "uid": self.uid, "namespace": self.namespace, "name": self.name, "qosClass": self.qos.value,
            "cgroupDir": self.cgroup_dir, "spec": self.spec.to_json(),
            "containers": [{"name": c.name, "id": c.container_id, "cgroupDir": c.cgroup_dir,
                            "spec": c.spec.to_json()} for c in self.containers],
        }
