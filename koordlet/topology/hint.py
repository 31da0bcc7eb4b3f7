"""A NUMA-affinity hint, as kubelet's topology manager passes them around.

The affinity is a bit mask (bit i = NUMA node i) held in a plain int: masks are
compared and ANDed on every permutation of the merge, and ints make that cheap.
`None` means "no NUMA preference" (kubelet's nil mask).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def mask_of(nodes: Iterable[int]) -> int:
    mask = 0
    for node in nodes:
        if node < 0:
            raise ValueError("NUMA node id %d is negative" % node)
        mask |= 1 << node
    return mask


def nodes_of(mask: int) -> tuple[int, ...]:
    nodes = []
    node = 0
    while mask:
        if mask & 1:
            nodes.append(node)
        mask >>= 1
        node += 1
    return tuple(nodes)


def is_narrower(a: int, b: int) -> bool:
    """kubelet's BitMask.IsNarrowerThan: fewer nodes, or as many and a lower mask value."""
    count_a, count_b = a.bit_count(), b.bit_count()
    if count_a == count_b:
        return a < b
    return count_a < count_b


@dataclass(frozen=True, slots=True)
class TopologyHint:
    affinity: int | None  # NUMA bit mask; None = any NUMA node will do
    preferred: bool

    @classmethod
    def of(cls, nodes: Iterable[int] | None, preferred: bool) -> "TopologyHint":
        return cls(None if nodes is None else mask_of(nodes), preferred)

    @property
    def nodes(self) -> tuple[int, ...] | None:
        return None if self.affinity is None else nodes_of(self.affinity)

    @property
    def count(self) -> int:
        return 0 if self.affinity is None else self.affinity.bit_count()


# What a provider returns for one container (or pod): hints per resource name.
# A missing map or a resource mapped to None: no preference. An empty list: no
# NUMA placement can satisfy the request.
ProviderHints = dict[str, list[TopologyHint] | None] | None

# Where the merged hint is kept for resources no provider gave hints for; Katalyst's
# topology manager names it "*" (kubelet's keeps no such entry: it hands one merged hint
# to every provider).
DEFAULT_RESOURCE_KEY = "*"
