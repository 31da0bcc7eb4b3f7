"""What the ORM has handed out: one frozen Allocation per (pod, container, resource),
held in an AllocationTable, and the read API other agents use (OrmAllocations)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping

from koordlet.util.board import Signal
from system.cpuset import format_cpuset, parse_cpuset

# resourceplugin.v1alpha1 ResourceAllocationInfo.oci_property_name values for cpusets
OCI_CPUSET_CPUS = "CpusetCpus"
OCI_CPUSET_MEMS = "CpusetMems"

BUILTIN = "builtin"


def _empty_int() -> Mapping[int, int]:
    return MappingProxyType({})


def _empty_str() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Allocation:
    pod_uid: str
    pod_namespace: str
    pod_name: str
    container_name: str
    resource: str
    quantity: float  # in the resource's unit as plugins see it (cpu: cores, memory: bytes)
    result: str = ""  # allocation_result, e.g. "2-3" for CpusetCpus
    oci_property: str = ""
    provider: str = BUILTIN  # BUILTIN, or the resource name a QRM plugin registered
    numa_nodes: tuple[int, ...] = ()  # nodes the allocation lives on
    numa_exclusive: bool = False  # those nodes are this pod's alone
    memory_by_node: Mapping[int, int] = field(default_factory=_empty_int)  # topology_assignments
    hint_nodes: tuple[int, ...] | None = None
    hint_preferred: bool = True
    is_node_resource: bool = True
    is_scalar_resource: bool = True
    # an init container's row: its CPUs go back to the pod's later containers (kubelet's reuse)
    init_container: bool = False
    envs: Mapping[str, str] = field(default_factory=_empty_str)
    annotations: Mapping[str, str] = field(default_factory=_empty_str)
    # the parsed cpu/node list of a cpuset row (InvalidValue at construction when malformed)
    _ids: frozenset[int] = field(init=False, repr=False, compare=False, default=frozenset())

    def __post_init__(self) -> None:
        if self.oci_property in (OCI_CPUSET_CPUS, OCI_CPUSET_MEMS):
            object.__setattr__(self, "_ids", parse_cpuset(self.result))

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.pod_uid, self.container_name, self.resource)

    @property
    def cpus(self) -> frozenset[int]:
        return self._ids if self.oci_property == OCI_CPUSET_CPUS else frozenset()

    @property
    def mems(self) -> frozenset[int]:
        return self._ids if self.oci_property == OCI_CPUSET_MEMS else frozenset()

    def to_json(self) -> dict[str, Any]:
        return {
            "podUid": self.pod_uid, "podNamespace": self.pod_namespace, "podName": self.pod_name,
            "containerName": self.container_name, "resourceName": self.resource,
            "allocatedQuantity": self.quantity, "allocationResult": self.result,
            "ociPropertyName": self.oci_property, "provider": self.provider,
            "numaNodes": list(self.numa_nodes), "numaExclusive": self.numa_exclusive,
            "topologyAssignments": {str(k): v for k, v in sorted(self.memory_by_node.items())},
            "hint": None if self.hint_nodes is None else list(self.hint_nodes),
            "hintPreferred": self.hint_preferred,
            "isNodeResource": self.is_node_resource, "isScalarResource": self.is_scalar_resource,
            "initContainer": self.init_container, "envs": dict(sorted(self.envs.items())), "annotations": dict(sorted(self.annotations.items())),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Allocation":
        """Raises KeyError / TypeError / ValueError on a malformed entry."""
        hint = data["hint"]
        return cls(
            pod_uid=str(data["podUid"]), pod_namespace=str(data["podNamespace"]),
            pod_name=str(data["podName"]), container_name=str(data["containerName"]),
            resource=str(data["resourceName"]), quantity=float(data["allocatedQuantity"]),
            result=str(data["allocationResult"]), oci_property=str(data["ociPropertyName"]),
            provider=str(data["provider"]), numa_nodes=tuple(int(n) for n in data["numaNodes"]),
            numa_exclusive=bool(data["numaExclusive"]),
            memory_by_node=MappingProxyType({int(k): int(v) for k, v in data["topologyAssignments"].items()}),
            hint_nodes=None if hint is None else tuple(int(n) for n in hint),
            hint_preferred=bool(data["hintPreferred"]),
            is_node_resource=bool(data["isNodeResource"]), is_scalar_resource=bool(data["isScalarResource"]),
            init_container=bool(data.get("initContainer", False)),  # absent in checkpoints before it
            envs=MappingProxyType({str(k): str(v) for k, v in data["envs"].items()}),
            annotations=MappingProxyType({str(k): str(v) for k, v in data["annotations"].items()}),
        )


def cpuset_allocation(base: Allocation, cpus: Iterable[int]) -> Allocation:
    return replace(base, result=format_cpuset(cpus), oci_property=OCI_CPUSET_CPUS)


Listener = Callable[[], None]


def canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _subtract(counter: Counter[int], amounts: Mapping[int, int]) -> None:
    for key, amount in amounts.items():
        counter[key] -= amount
        if counter[key] <= 0:
            del counter[key]


class AllocationTable:
    """Every live allocation, keyed by (pod uid, container, resource). Only the ORM writes."""

    def __init__(self, entries: Iterable[Allocation] = ()) -> None:
        self._entries: dict[tuple[str, str, str], Allocation] = {}
        self._by_pod: dict[str, dict[tuple[str, str, str], Allocation]] = {}
        # how many allocations hold each CPU (kept incrementally: parsing every cpu
        # list on every admission would cost more than the admission itself)
        self._cpu_holders: Counter[int] = Counter()
        self._memory_used: Counter[int] = Counter()  # NUMA node -> bytes held by NUMA-bound rows
        self._exclusive_nodes: Counter[int] = Counter()
        self._json: dict[tuple[str, str, str], str] = {}  # canonical JSON per row, for the checkpoint
        self._changes = Signal("orm-allocation-table")
        self.generation = 0  # bumped on every change
        for entry in entries:
            self._add(entry)

    def _add(self, allocation: Allocation) -> None:
        old = self._entries.get(allocation.key)
        if old is not None:
            self._drop(old)
        self._entries[allocation.key] = allocation
        self._by_pod.setdefault(allocation.pod_uid, {})[allocation.key] = allocation
        self._cpu_holders.update(allocation.cpus)
        self._memory_used.update(allocation.memory_by_node)
        if allocation.numa_exclusive:
            self._exclusive_nodes.update(allocation.numa_nodes)
        self._json[allocation.key] = canonical_json(allocation.to_json())

    def _drop(self, allocation: Allocation) -> None:
        del self._entries[allocation.key]
        pod = self._by_pod[allocation.pod_uid]
        del pod[allocation.key]
        if not pod:
            del self._by_pod[allocation.pod_uid]
        del self._json[allocation.key]
        _subtract(self._cpu_holders, {cpu: 1 for cpu in allocation.cpus})
        _subtract(self._memory_used, allocation.memory_by_node)
        if allocation.numa_exclusive:
            _subtract(self._exclusive_nodes, {node: 1 for node in allocation.numa_nodes})

    def put(self, allocation: Allocation) -> None:
        self._add(allocation)
        self._changed()

    def remove_pod(self, pod_uid: str) -> tuple[Allocation, ...]:
        gone = tuple(self._by_pod.get(pod_uid, {}).values())
        for allocation in gone:
            self._drop(allocation)
        if gone:
            self._changed()
        return gone

    def remove_containers(self, pod_uid: str, containers: set[str]) -> tuple[Allocation, ...]:
        gone = tuple(a for a in self._by_pod.get(pod_uid, {}).values() if a.container_name in containers)
        for allocation in gone:
            self._drop(allocation)
        if gone:
            self._changed()
        return gone

    def replace_all(self, entries: Iterable[Allocation]) -> None:
        for allocation in list(self._entries.values()):
            self._drop(allocation)
        for entry in entries:
            self._add(entry)
        self._changed()

    def entries(self) -> tuple[Allocation, ...]:
        return tuple(sorted(self._entries.values(), key=lambda a: a.key))

    def pod_uids(self) -> frozenset[str]:
        return frozenset(self._by_pod)

    def for_pod(self, pod_uid: str) -> tuple[Allocation, ...]:
        return tuple(self._by_pod.get(pod_uid, {}).values())

    def get(self, pod_uid: str, container: str, resource: str) -> Allocation | None:
        return self._entries.get((pod_uid, container, resource))

    def exclusive_cpus(self) -> frozenset[int]:
        return frozenset(self._cpu_holders)

    def double_booked_cpus(self) -> frozenset[int]:
        """CPUs held by two pods, or by two containers of one pod that are not an init
        container and the container reusing its CPUs."""
        holders: dict[int, tuple[str, int]] = {}  # cpu -> (pod uid, rows not of init containers)
        doubled = set()
        for allocation in self._entries.values():
            for cpu in allocation.cpus:
                pod, others = holders.get(cpu, (allocation.pod_uid, 0))
                others += not allocation.init_container
                if pod != allocation.pod_uid or others > 1:
                    doubled.add(cpu)
                holders[cpu] = (pod, others)
        return frozenset(doubled)

    def reusable_cpus(self, pod_uid: str) -> frozenset[int]:
        """CPUs the pod's init containers hold and none of its other containers do."""
        init: set[int] = set()
        others: set[int] = set()
        for allocation in self._by_pod.get(pod_uid, {}).values():
            (init if allocation.init_container else others).update(allocation.cpus)
        return frozenset(init - others)

    def exclusive_nodes(self) -> frozenset[int]:
        return frozenset(self._exclusive_nodes)

    def memory_used(self) -> Mapping[int, int]:
        """NUMA node -> bytes NUMA-bound allocations hold there."""
        return MappingProxyType(self._memory_used)

    def canonical_entries(self) -> list[str]:
        """Each row's canonical JSON, in entries() order (the checkpoint joins them)."""
        return [self._json[key] for key in sorted(self._json)]

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._changes.subscribe(listener)

    def _changed(self) -> None:
        self.generation += 1
        self._changes.fire()


class OrmAllocations:
    """The read API the runtime hooks (CPUSetAllocator) and PodResources take.

    cpuset_for / mems_for give a container's exclusive cpuset / memory nodes, or None when
    the ORM has not pinned it (the container follows the shared pool). shared_pool() is
    every online CPU no container holds exclusively; reserved CPUs stay in it, as in
    kubelet's static policy, and are never handed out exclusively.
    """

    def __init__(self, table: AllocationTable, online_cpus: frozenset[int], reserved: frozenset[int]) -> None:
        self._table = table
        self.online_cpus = online_cpus
        self.reserved_cpus = reserved

    def cpuset_for(self, pod_uid: str, container_name: str) -> frozenset[int] | None:
        cpus: set[int] = set()
        found = False
        for allocation in self._table.for_pod(pod_uid):
            if allocation.container_name == container_name and allocation.oci_property == OCI_CPUSET_CPUS:
                cpus |= allocation.cpus
                found = True
        return frozenset(cpus) if found else None

    def mems_for(self, pod_uid: str, container_name: str) -> frozenset[int] | None:
        for allocation in self._table.for_pod(pod_uid):
            if allocation.container_name == container_name and allocation.oci_property == OCI_CPUSET_MEMS:
                return allocation.mems
        return None

    def shared_pool(self) -> frozenset[int]:
        return self.online_cpus - self._table.exclusive_cpus()

    def entries(self) -> tuple[Allocation, ...]:
        return self._table.entries()

    @property
    def generation(self) -> int:
        return self._table.generation

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """`listener()` after every change (on the loop; must not block)."""
        return self._table.subscribe(listener)
