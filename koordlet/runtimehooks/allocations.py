"""Exclusive CPUs on the node, as the CPUSetAllocator hook needs them.

`CpuAllocations` is a frozen snapshot handed to the hooks; `AllocationIndex`
keeps it current from pod events in O(1) per event, so a CreateContainer never
walks every pod. Exclusive CPUs come from an out-of-band allocator when one is
plugged in (`CpusetProvider`, e.g. the ORM's topology manager) and otherwise
from koord-scheduler's `scheduling.koordinator.sh/resource-status` annotation.
"""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.apis.annotations import AnnotationError, resource_status_cpuset
from koordlet.apis.qos import CpuBinding, cpu_binding
from koordlet.ports.cpusets import CpusetProvider
from koordlet.statesinformer.model import PodInfo


def bound_cpus(pod: PodInfo, provider: CpusetProvider | None, container_name: str | None = None) -> frozenset[int]:
    """The CPUs bound to `pod` (one container's, or the whole pod's); empty when none.
    The provider wins over the annotation and may pin pods of any class (the ORM with
    --cpu-manager-policy=static pins Guaranteed pods); an invalid annotation counts as absent."""
    if provider is not None:
        names = [container_name] if container_name is not None else [c.name for c in pod.containers]
        found = frozenset().union(*(provider.cpuset_for(pod.uid, name) or frozenset() for name in names))
        if found:
            return found
    if cpu_binding(pod.qos) is None:
        return frozenset()
    try:
        return resource_status_cpuset(pod.annotations) or frozenset()
    except AnnotationError:
        return frozenset()


@dataclass(frozen=True, slots=True)
class CpuAllocations:
    exclusive: frozenset[int] = frozenset()
    reserved: frozenset[int] = frozenset()
    provider: CpusetProvider | None = None

    def own_cpus(self, pod: PodInfo, container_name: str) -> frozenset[int]:
        return bound_cpus(pod, self.provider, container_name)


NO_ALLOCATIONS = CpuAllocations()


class AllocationIndex:
    """Bound CPUs per pod, and the node-wide unions as a cached snapshot."""

    def __init__(self, provider: CpusetProvider | None = None) -> None:
        self.provider = provider
        self._by_pod: dict[str, tuple[CpuBinding, frozenset[int]]] = {}
        # how many pods hold each (binding, CPU): a union changes only when a count leaves or
        # reaches 0 (ten LSR pods bound to the same CPU move the pools once, not ten times)
        self._holders: dict[tuple[CpuBinding, int], int] = {}
        self._snapshot: CpuAllocations | None = None

    def put(self, pod: PodInfo) -> bool:
        """Record the pod's bound CPUs; True when the node's unions changed."""
        cpus = bound_cpus(pod, self.provider)
        # a pod the provider pinned without a binding class (kubelet-style static CPUs) is exclusive
        binding = cpu_binding(pod.qos) or (CpuBinding.EXCLUSIVE if cpus else None)
        entry = (binding, cpus) if binding is not None and cpus else None
        old = self._by_pod.get(pod.uid)
        if old == entry:
            return False
        if entry is None:
            del self._by_pod[pod.uid]
        else:
            self._by_pod[pod.uid] = entry
        return self._moved(old, entry)

    def remove(self, uid: str) -> bool:
        old = self._by_pod.pop(uid, None)
        return old is not None and self._moved(old, None)

    def _moved(self, old: tuple[CpuBinding, frozenset[int]] | None,
               new: tuple[CpuBinding, frozenset[int]] | None) -> bool:
        """One pod's entry replaced in the counts; whether a union gained or lost a CPU."""
        holders = self._holders
        touched = {(entry[0], cpu) for entry in (old, new) if entry is not None for cpu in entry[1]}
        before = {key for key in touched if key in holders}
        if new is not None:
            for cpu in new[1]:
                holders[(new[0], cpu)] = holders.get((new[0], cpu), 0) + 1
        if old is not None:
            for cpu in old[1]:
                key = (old[0], cpu)
                if holders[key] == 1:
                    del holders[key]
                else:
                    holders[key] -= 1
        if {key for key in touched if key in holders} == before:
            return False
        self._snapshot = None
        return True

    def snapshot(self) -> CpuAllocations:
        if self._snapshot is None:
            exclusive: set[int] = set()
            reserved: set[int] = set()
            for binding, cpus in list(self._by_pod.values()):  # one atomic copy: /metrics reads from a thread
                (exclusive if binding is CpuBinding.EXCLUSIVE else reserved).update(cpus)
            self._snapshot = CpuAllocations(frozenset(exclusive), frozenset(reserved), self.provider)
        return self._snapshot
