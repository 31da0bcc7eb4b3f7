"""The policy interface, the closed set of policy names, and the factory.

Each policy lives in its own small file (policy_<name>.py) as a pure merge from
providers' hints to (hint per resource, admit).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Protocol

from koordlet.topology.hint import ProviderHints, TopologyHint

# kubelet and Katalyst refuse more: the merge walks the cross product of hints,
# and every hint is a subset of the nodes, so the work grows as 2^nodes per resource.
MAX_ALLOWABLE_NUMA_NODES = 8


class PolicyName(Enum):
    NONE = "none"
    BEST_EFFORT = "best-effort"
    RESTRICTED = "restricted"
    SINGLE_NUMA_NODE = "single-numa-node"
    NUMERIC = "numeric"


class PolicyError(ValueError):
    """The policy cannot be used on this machine or with this name."""


class Policy(Protocol):
    @property
    def name(self) -> PolicyName: ...

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[dict[str, TopologyHint], bool]:
        """The hint each resource must be allocated with, and whether the pod is admitted."""
        ...


def parse_policy_name(text: str) -> PolicyName:
    try:
        return PolicyName(text.strip())
    except ValueError:
        choices = ", ".join(p.value for p in PolicyName)
        raise PolicyError("unknown topology policy %r (use one of %s)" % (text, choices)) from None


def new_policy(name: PolicyName, numa_nodes: Sequence[int],
               align_resources: Sequence[str] = ("cpu", "memory")) -> Policy:
    from koordlet.topology.policy_best_effort import BestEffortPolicy
    from koordlet.topology.policy_none import NonePolicy
    from koordlet.topology.policy_numeric import NumericPolicy
    from koordlet.topology.policy_restricted import RestrictedPolicy
    from koordlet.topology.policy_single_numa_node import SingleNumaNodePolicy

    if name is not PolicyName.NONE and len(numa_nodes) > MAX_ALLOWABLE_NUMA_NODES:
        raise PolicyError("topology policy %s supports at most %d NUMA nodes, this machine has %d "
                          "(use policy none)" % (name.value, MAX_ALLOWABLE_NUMA_NODES, len(numa_nodes)))
    if name is PolicyName.NONE:
        return NonePolicy()
    if name is PolicyName.BEST_EFFORT:
        return BestEffortPolicy(tuple(numa_nodes))
    if name is PolicyName.RESTRICTED:
        return RestrictedPolicy(tuple(numa_nodes))
    if name is PolicyName.SINGLE_NUMA_NODE:
        return SingleNumaNodePolicy(tuple(numa_nodes))
    return NumericPolicy(tuple(align_resources))
