"""The NUMA zones port: an allocator that knows what it handed out (the ORM) gives the
reporter its NodeResourceTopology zones and its topology policy, so the report and
`/api/v1/topology` agree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class NumaZones:
    zones: list[dict[str, Any]]  # topology/zones.py numa_zones form
    policy: str  # the topology manager's policy and scope, kubelet's spelling
    scope: str


class ZonesProvider(Protocol):
    def topology_zones(self) -> NumaZones | None:
        """The zones; None while the allocator is not running."""
        ...


class NoZones:
    """No allocator on this node: the reporter derives the zones from the host."""

    def topology_zones(self) -> NumaZones | None:
        return None


NO_ZONES = NoZones()
