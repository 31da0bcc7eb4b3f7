"""The machine's CPUs grouped the ways the allocator takes them: sockets, NUMA nodes,
physical cores. Built once from system.topology.CpuTopology."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from system.topology import CpuTopology


@dataclass(frozen=True, slots=True)
class CpuLayout:
    cpus: frozenset[int]
    socket_cpus: Mapping[int, frozenset[int]]
    node_cpus: Mapping[int, frozenset[int]]
    core_cpus: Mapping[tuple[int, int], frozenset[int]]  # (socket, core_id) -> its threads
    core_of: Mapping[int, tuple[int, int]]
    node_of: Mapping[int, int]
    node_memory: Mapping[int, int]  # NUMA node -> MemTotal bytes

    @property
    def numa_nodes(self) -> tuple[int, ...]:
        return tuple(sorted(self.node_cpus))

    @classmethod
    def of(cls, topology: CpuTopology) -> "CpuLayout":
        sockets: dict[int, set[int]] = {}
        nodes: dict[int, set[int]] = {n.node: set() for n in topology.numa_nodes}
        cores: dict[tuple[int, int], set[int]] = {}
        for info in topology.cpus:
            sockets.setdefault(info.socket, set()).add(info.cpu)
            nodes.setdefault(info.numa_node, set()).add(info.cpu)
            cores.setdefault(info.core_key, set()).add(info.cpu)
        freeze = lambda d: MappingProxyType({k: frozenset(v) for k, v in d.items()})  # noqa: E731
        return cls(
            cpus=topology.online_cpus,
            socket_cpus=freeze(sockets),
            node_cpus=freeze(nodes),
            core_cpus=freeze(cores),
            core_of=MappingProxyType({i.cpu: i.core_key for i in topology.cpus}),
            node_of=MappingProxyType({i.cpu: i.numa_node for i in topology.cpus}),
            node_memory=MappingProxyType({n.node: n.memory_total_bytes for n in topology.numa_nodes}),
        )

    def cpus_in(self, nodes: tuple[int, ...] | frozenset[int]) -> frozenset[int]:
        result: frozenset[int] = frozenset()
        for node in nodes:
            result |= self.node_cpus.get(node, frozenset())
        return result
