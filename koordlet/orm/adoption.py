"""Adopting what the runtime already runs (pure).

After a restart the checkpoint may lack a container the runtime created with exclusive
CPUs (its admission was answered, then the allocation was released on an incomplete pod
listing, or never landed). What the runtime runs is the truth: when a running
container of an exclusive request holds exactly that many CPUs and nothing else of ours
claims them, those CPUs become its allocation instead of a fresh (different) one.
"""

from __future__ import annotations

from koordlet.orm.allocation import Allocation, AllocationTable, cpuset_allocation
from koordlet.orm.builtin_cpu import CPU, whole_cpus
from koordlet.orm.cpu_layout import CpuLayout
from koordlet.topology.request import ContainerRequest


class AdoptionConflict(Exception):
    """The runtime's CPUs cannot be this container's allocation; str() says why."""


def adoptable(request: ContainerRequest, cpus: frozenset[int]) -> bool:
    """Whether `cpus` (the runtime's cpuset) looks like an exclusive allocation for `request`:
    an exclusive whole-CPU request (not NUMA-exclusive: that owns whole nodes) holding
    exactly as many CPUs as it asks. A shared-pool cpuset is larger and is not adopted."""
    if not request.exclusive_cpus or request.numa_exclusive:
        return False
    count = whole_cpus(request.requests.get(CPU, 0))
    return count is not None and len(cpus) == count


def adopted_allocation(layout: CpuLayout, reserved: frozenset[int], table: AllocationTable,
                       request: ContainerRequest, cpus: frozenset[int]) -> Allocation:
    """The allocation `request` gets for the CPUs it already runs on; AdoptionConflict
    when they are offline, reserved, or held by another allocation (then the caller admits
    it the usual way and the runtime hooks move it)."""
    offline = cpus - layout.cpus
    if offline:
        raise AdoptionConflict("CPUs %s are not online" % sorted(offline))
    if cpus & reserved:
        raise AdoptionConflict("CPUs %s are reserved" % sorted(cpus & reserved))
    held = cpus & (table.exclusive_cpus() | layout.cpus_in(table.exclusive_nodes()))
    if held:
        raise AdoptionConflict("CPUs %s are held by another allocation" % sorted(held))
    base = Allocation(request.pod_uid, request.pod_namespace, request.pod_name, request.container_name, CPU,
                      quantity=float(len(cpus)), numa_nodes=tuple(sorted({layout.node_of[c] for c in cpus})))
    return cpuset_allocation(base, cpus)
