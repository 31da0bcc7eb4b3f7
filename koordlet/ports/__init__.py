"""Ports: the small typed links between agents (see koordlet/hubs.py)."""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.ports.admission import ADMIT_ALL, Admitter
from koordlet.ports.cpusets import NO_EXCLUSIVE_CPUS, CpusetProvider
from koordlet.ports.zones import NO_ZONES, ZonesProvider


@dataclass(frozen=True, slots=True)
class Ports:
    """What one agent offers the agents built after it; unset ports keep their null
    implementation (admit everything, pin nothing)."""

    admitter: Admitter = ADMIT_ALL
    cpusets: CpusetProvider = NO_EXCLUSIVE_CPUS
    zones: ZonesProvider = NO_ZONES

    def overlaid(self, offers: Ports) -> Ports:
        """These ports with every port `offers` sets replacing the one here."""
        return Ports(admitter=self.admitter if offers.admitter is ADMIT_ALL else offers.admitter,
                     cpusets=self.cpusets if offers.cpusets is NO_EXCLUSIVE_CPUS else offers.cpusets,
                     zones=self.zones if offers.zones is NO_ZONES else offers.zones)
