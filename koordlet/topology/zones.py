"""NodeResourceTopology-style NUMA zones (pure): zones[].name "node-<id>", type "Node",
resources[] cpu (whole CPUs) and memory (bytes) with capacity/allocatable/available, plus
the CPU lists `/api/v1/topology` shows. The ORM's summary and the reporter's object without
the ORM both build them here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from system.cpuset import format_cpuset
from system.topology import CpuTopology


def numa_zones(node_cpus: Mapping[int, frozenset[int]], node_memory: Mapping[int, int], reserved: frozenset[int],
               exclusive: frozenset[int], memory_used: Mapping[int, int]) -> list[dict[str, Any]]:
    """One zone per NUMA node: reserved CPUs are not allocatable, exclusive ones not available."""
    zones = []
    for node in sorted(node_cpus):
        cpus = node_cpus[node]
        node_reserved = cpus & reserved
        taken = cpus & exclusive
        memory = node_memory.get(node, 0)
        zones.append({
            "name": "node-%d" % node, "type": "Node",
            "cpus": format_cpuset(cpus), "reservedCpus": format_cpuset(node_reserved),
            "exclusiveCpus": format_cpuset(taken), "sharedCpus": format_cpuset(cpus - taken),
            "resources": [
                {"name": "cpu", "capacity": str(len(cpus)), "allocatable": str(len(cpus - node_reserved)),
                 "available": str(len(cpus - node_reserved - taken))},
                {"name": "memory", "capacity": str(memory), "allocatable": str(memory),
                 "available": str(memory - memory_used.get(node, 0))},
            ],
        })
    return zones


def host_zones(topology: CpuTopology, exclusive: frozenset[int]) -> list[dict[str, Any]]:
    """The host's zones without an allocator: which CPUs kubelet reserves is not in its
    checkpoint, and memory handed out per node is unknown, so both count as free."""
    node_cpus = {node.node: frozenset(info.cpu for info in topology.cpus if info.numa_node == node.node)
                 for node in topology.numa_nodes}
    return numa_zones(node_cpus, {node.node: node.memory_total_bytes for node in topology.numa_nodes},
                      frozenset(), exclusive, {})
