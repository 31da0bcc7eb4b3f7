"""Where the NodeResourceTopology's zones come from: the ORM's port when it runs, else the
host topology with kubelet's exclusive CPUs (its checkpoint, read in a worker thread)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from koordlet.ports.zones import ZonesProvider
from koordlet.reporter.nrt import POLICY_NONE, SCOPE_CONTAINER, nrt_object, zone_costs
from koordlet.reporter.resource_managers import KubeletStateFiles
from koordlet.topology.zones import host_zones
from system.topology import CpuTopology


@dataclass(frozen=True, slots=True)
class NrtSource:
    node_name: str
    topology: CpuTopology | None
    orm: ZonesProvider
    kubelet: KubeletStateFiles

    async def build(self) -> dict[str, Any] | None:
        """The object, or None when there is no ORM and the host's topology could not be read."""
        costs = zone_costs(self.topology.numa_nodes) if self.topology is not None else {}
        numa = self.orm.topology_zones()
        if numa is not None:
            return nrt_object(self.node_name, numa.zones, numa.policy, numa.scope, costs)
        if self.topology is None:
            return None
        exclusive = await asyncio.to_thread(self.kubelet.exclusive_cpus)
        return nrt_object(self.node_name, host_zones(self.topology, exclusive), POLICY_NONE, SCOPE_CONTAINER, costs)
