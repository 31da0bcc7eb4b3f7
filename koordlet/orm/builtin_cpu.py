"""The built-in CPU provider: exclusive whole CPUs for containers that ask for them.

Free = online - reserved - CPUs already held exclusively - CPUs of NUMA nodes another
pod holds exclusively. A numa_exclusive container gets every free CPU of its nodes.
Containers that are not exclusive share the pool and get no allocation.

Init containers, as in Katalyst's native policy, state no NUMA preference; like kubelet's
static policy, the CPUs an init container holds count as free for the pod's later
containers (it has finished when they start). A hint narrower than the request (the
best-effort policy admits one) gets every free CPU of its nodes first and the rest from
the other nodes, as kubelet does; a NUMA-bound container gets its nodes' CPUs or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from koordlet.orm.allocation import BUILTIN, Allocation, AllocationTable, cpuset_allocation
from koordlet.orm.cpu_layout import CpuLayout
from koordlet.orm.cpu_take import NotEnoughCpus, take_cpus
from koordlet.orm.numa_hints import NumaMasks
from koordlet.orm.provider import AllocationError
from koordlet.topology.hint import ProviderHints, TopologyHint, nodes_of
from koordlet.topology.request import ContainerRequest, ContainerType

CPU = "cpu"


def whole_cpus(milli: int) -> int | None:
    """The number of whole CPUs in a request, or None when it is not a whole number."""
    if milli <= 0 or milli % 1000:
        return None
    return milli // 1000


@dataclass(slots=True)
class BuiltinCpuProvider:
    layout: CpuLayout
    reserved: frozenset[int]
    table: AllocationTable
    name: str = BUILTIN
    masks: NumaMasks = field(init=False)
    capacity: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.masks = NumaMasks(self.layout.numa_nodes)
        self.capacity = self.masks.capacity(
            {n: len(cpus - self.reserved) for n, cpus in self.layout.node_cpus.items()})

    def serves(self, resource: str) -> bool:
        return resource == CPU

    def free_cpus(self) -> frozenset[int]:
        owned = self.layout.cpus_in(self.table.exclusive_nodes())
        return self.layout.cpus - self.reserved - self.table.exclusive_cpus() - owned

    def _count(self, request: ContainerRequest) -> int | None:
        if not request.exclusive_cpus:
            return None
        return whole_cpus(request.requests.get(CPU, 0))

    def _untouched_nodes(self) -> tuple[int, ...]:
        """NUMA nodes where nobody holds anything exclusively (candidates for numa_exclusive)."""
        busy = {self.layout.node_of[c] for c in self.table.exclusive_cpus()} | self.table.exclusive_nodes()
        return tuple(n for n in self.layout.numa_nodes if n not in busy)

    async def topology_hints(self, request: ContainerRequest, resource: str) -> ProviderHints:
        count = self._count(request)
        if count is None:
            return None
        if request.container_type is ContainerType.INIT:
            return {CPU: None}
        free = self.free_cpus() | self.table.reusable_cpus(request.pod_uid)
        available = {n: len(cpus & free) for n, cpus in self.layout.node_cpus.items()}
        usable = frozenset(self._untouched_nodes()) if request.numa_exclusive else None
        return {CPU: self.masks.hints(self.capacity, available, count, usable)}

    async def allocate(self, request: ContainerRequest, resource: str,
                       hint: TopologyHint | None) -> tuple[Allocation, ...]:
        count = self._count(request)
        if count is None:
            return ()
        nodes = None if hint is None or hint.affinity is None else nodes_of(hint.affinity)
        free = self.free_cpus() | self.table.reusable_cpus(request.pod_uid)
        try:
            if request.numa_exclusive:
                if nodes is None or hint is None or not hint.preferred:  # no placement: the fewest whole nodes
                    nodes = self._exclusive_nodes_for(count, free)
                elif not set(nodes) <= set(self._untouched_nodes()):
                    raise NotEnoughCpus("NUMA nodes %s are not free for an exclusive pod" % list(nodes))
                cpus = free & self.layout.cpus_in(nodes)
                if len(cpus) < count:
                    raise NotEnoughCpus("NUMA nodes %s have %d free CPUs, asked %d" % (list(nodes), len(cpus), count))
            else:
                cpus = take_cpus(self.layout, free, count, nodes, spill=not request.numa_binding)
        except NotEnoughCpus as exc:
            raise AllocationError("%s/%s container %s: %s" % (request.pod_namespace, request.pod_name,
                                                              request.container_name, exc)) from None
        used_nodes = tuple(sorted({self.layout.node_of[c] for c in cpus}))
        base = Allocation(
            request.pod_uid, request.pod_namespace, request.pod_name, request.container_name, CPU,
            quantity=float(len(cpus)) if request.numa_exclusive else float(count),
            numa_nodes=used_nodes, numa_exclusive=request.numa_exclusive,
            hint_nodes=None if hint is None else hint.nodes,
            hint_preferred=True if hint is None else hint.preferred,
            init_container=request.container_type is ContainerType.INIT,
        )
        return (cpuset_allocation(base, cpus),)

    def _exclusive_nodes_for(self, count: int, free: frozenset[int]) -> tuple[int, ...]:
        """Untouched nodes, the roomiest first, until they hold `count` free CPUs."""
        untouched = sorted(self._untouched_nodes(), key=lambda n: (-len(free & self.layout.node_cpus[n]), n))
        chosen: list[int] = []
        held = 0
        for node in untouched:
            chosen.append(node)
            held += len(free & self.layout.node_cpus[node])
            if held >= count:
                return tuple(sorted(chosen))
        raise NotEnoughCpus("no free NUMA nodes hold an exclusive pod of %d CPUs" % count)

    async def remove_pod(self, pod_uid: str) -> None:
        return None  # the table is the state: dropping the pod's rows frees its CPUs
