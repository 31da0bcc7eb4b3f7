"""The node as the informer knows it standalone: its name and what the host has.

Capacity from the host facts (online CPUs in milli-cores, MemTotal in bytes). Without
an API server there are no kubelet reservations to subtract, so allocatable equals
capacity. A host fact that could not be read leaves its resource out, and says so.
"""

from __future__ import annotations

from types import MappingProxyType

import structlog

from koordlet.statesinformer.model import NodeInfo
from koordlet.util.host_facts import HostFacts

log = structlog.get_logger(__name__)


def node_from_facts(name: str, facts: HostFacts) -> NodeInfo:
    capacity: dict[str, int] = {}
    if facts.topology is not None:
        capacity["cpu"] = len(facts.topology.online_cpus) * 1000
    else:
        log.warning("node_capacity_unknown", resource="cpu", error=facts.topology_error)
    if facts.memory_bytes is not None:
        capacity["memory"] = facts.memory_bytes
    else:
        log.warning("node_capacity_unknown", resource="memory", error=facts.memory_error)
    frozen = MappingProxyType(capacity)
    return NodeInfo(name=name, capacity=frozen, allocatable=frozen)
