"""A NodeResourceTopology-style summary of the NUMA zones (topology/zones.py) and what the
ORM handed out, for the daemon's HTTP API and the reporter's NodeResourceTopology (pure).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from koordlet.orm.allocation import OrmAllocations
from koordlet.orm.cpu_layout import CpuLayout
from koordlet.topology.zones import numa_zones
from system.cpuset import format_cpuset


def zones_summary(layout: CpuLayout, allocations: OrmAllocations, rejections: Mapping[str, str]) -> dict[str, Any]:
    entries = allocations.entries()
    memory_used: dict[int, int] = {}
    for entry in entries:
        for node, size in entry.memory_by_node.items():
            memory_used[node] = memory_used.get(node, 0) + size
    return {
        "zones": numa_zones(layout.node_cpus, layout.node_memory, allocations.reserved_cpus,
                            allocations.online_cpus - allocations.shared_pool(), memory_used),
        "sharedPool": format_cpuset(allocations.shared_pool()),
        "allocations": [entry.to_json() for entry in entries],
        "rejections": dict(sorted(rejections.items())),
    }
