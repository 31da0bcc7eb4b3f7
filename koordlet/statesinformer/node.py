"""The node as the informer knows it standalone: its name and what the host has.

Capacity from the host (online CPUs in milli-cores, MemTotal in bytes). Without an
API server there are no kubelet reservations to subtract, so allocatable equals
capacity. A host fact that cannot be read leaves its resource out, and says so.
"""

from __future__ import annotations

from types import MappingProxyType

import structlog

from koordlet.statesinformer.model import NodeInfo
from system.errors import SystemFileError
from system.host import Host
from system.procfs import read_meminfo
from system.topology import read_cpu_topology

log = structlog.get_logger(__name__)


def node_from_host(name: str, host: Host) -> NodeInfo:
    capacity: dict[str, int] = {}
    try:
        capacity["cpu"] = len(read_cpu_topology(host).online_cpus) * 1000
    except (OSError, ValueError, SystemFileError) as exc:
        log.warning("node_capacity_unknown", resource="cpu", error=str(exc))
    try:
        capacity["memory"] = read_meminfo(host).total_bytes
    except (OSError, ValueError, SystemFileError) as exc:
        log.warning("node_capacity_unknown", resource="memory", error=str(exc))
    frozen = MappingProxyType(capacity)
    return NodeInfo(name=name, capacity=frozen, allocatable=frozen)
