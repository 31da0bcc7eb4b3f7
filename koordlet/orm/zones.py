"""A NodeResourceTopology-style summary of the NUMA zones and what the ORM handed out,
for the daemon's HTTP API and the reports (pure). Zone names and resource fields follow
the NRT CRD (zones[].name "node-<id>", type "Node", resources[] capacity/allocatable/available).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordlet.orm.allocation import OrmAllocations
from koordlet.orm.cpu_layout import CpuLayout
from system.cpuset import format_cpuset


def zones_summary(layout: CpuLayout, allocations: OrmAllocations, rejections: Mapping[str, str]) -> dict[str, Any]:
    entries = allocations.entries()
    exclusive = allocations.online_cpus - allocations.shared_pool()
    memory_used: dict[int, int] = {}
    for entry in entries:
        for node, size in entry.memory_by_node.items():
            memory_used[node] = memory_used.get(node, 0) + size
    zones = []
    for node in layout.numa_nodes:
        cpus = layout.node_cpus[node]
        reserved = cpus & allocations.reserved_cpus
        taken = cpus & exclusive
        memory = layout.node_memory.get(node, 0)
        zones.append({
            "name": "node-%d" % node, "type": "Node",
            "cpus": format_cpuset(cpus), "reservedCpus": format_cpuset(reserved),
            "exclusiveCpus": format_cpuset(taken), "sharedCpus": format_cpuset(cpus - taken),
            "resources": [
                {"name": "cpu", "capacity": str(len(cpus)), "allocatable": str(len(cpus - reserved)),
                 "available": str(len(cpus - reserved - taken))},
                {"name": "memory", "capacity": str(memory), "allocatable": str(memory),
                 "available": str(memory - memory_used.get(node, 0))},
            ],
        })
    return {
        "zones": zones,
        "sharedPool": format_cpuset(allocations.shared_pool()),
        "allocations": [entry.to_json() for entry in entries],
        "rejections": dict(sorted(rejections.items())),
    }
