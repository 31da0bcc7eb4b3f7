"""The built-in memory provider: NUMA-bound containers get memory nodes (cpuset.mems)
and their request is accounted per node; others get no allocation.

Free per node = MemTotal - what NUMA-bound containers already hold there. A request
spanning several nodes is filled node by node, the freest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from koordlet.orm.allocation import BUILTIN, OCI_CPUSET_MEMS, Allocation, AllocationTable
from koordlet.orm.cpu_layout import CpuLayout
from koordlet.orm.numa_hints import NumaMasks
from koordlet.orm.provider import AllocationError
from koordlet.topology.hint import ProviderHints, TopologyHint, nodes_of
from koordlet.topology.request import ContainerRequest
from system.cpuset import format_cpuset

MEMORY = "memory"


@dataclass(slots=True)
class BuiltinMemoryProvider:
    layout: CpuLayout
    table: AllocationTable
    name: str = BUILTIN
    masks: NumaMasks = field(init=False)
    capacity: tuple[int, ...] = field(init=False)

    def serves(self, resource: str) -> bool:
        return resource == MEMORY

    def __post_init__(self) -> None:
        self.masks = NumaMasks(self.layout.numa_nodes)
        self.capacity = self.masks.capacity(self.layout.node_memory)

    def free_by_node(self) -> dict[int, int]:
        used = self.table.memory_used()
        return {node: total - used.get(node, 0) for node, total in self.layout.node_memory.items()}

    def _untouched_nodes(self) -> frozenset[int]:
        held = self.table.memory_used().keys() | self.table.exclusive_nodes()
        return frozenset(n for n in self.layout.numa_nodes if n not in held)

    async def topology_hints(self, request: ContainerRequest, resource: str) -> ProviderHints:
        need = request.requests.get(MEMORY, 0)
        if not request.numa_binding or need <= 0:
            return None
        usable = self._untouched_nodes() if request.numa_exclusive else None
        return {MEMORY: self.masks.hints(self.capacity, self.free_by_node(), need, usable)}

    async def allocate(self, request: ContainerRequest, resource: str,
                       hint: TopologyHint | None) -> tuple[Allocation, ...]:
        need = request.requests.get(MEMORY, 0)
        if not request.numa_binding or need <= 0:
            return ()
        nodes = self.layout.numa_nodes if hint is None or hint.affinity is None else nodes_of(hint.affinity)
        free = self.free_by_node()
        per_node: dict[int, int] = {}
        left = need
        for node in sorted(nodes, key=lambda n: (-free.get(n, 0), n)):
            if left <= 0:
                break
            take = min(left, max(0, free.get(node, 0)))
            if take:
                per_node[node] = take
                left -= take
        if left > 0:
            raise AllocationError("%s/%s container %s: %d bytes of memory do not fit NUMA nodes %s"
                                  % (request.pod_namespace, request.pod_name, request.container_name,
                                     need, list(nodes)))
        return (Allocation(
            request.pod_uid, request.pod_namespace, request.pod_name, request.container_name, MEMORY,
            quantity=float(need), result=format_cpuset(nodes), oci_property=OCI_CPUSET_MEMS,
            numa_nodes=tuple(sorted(nodes)), numa_exclusive=request.numa_exclusive,
            memory_by_node=MappingProxyType(per_node),
            hint_nodes=None if hint is None else hint.nodes,
            hint_preferred=True if hint is None else hint.preferred,
        ),)

    async def remove_pod(self, pod_uid: str) -> None:
        return None
