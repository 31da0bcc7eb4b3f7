"""kubelet's hint generation for a NUMA-bound quantity (CPU manager / memory manager).

For every non-empty set of NUMA nodes: if the nodes' capacity could hold the request,
the set counts towards the smallest such size; if their free amount holds it now, the
set is a hint. Hints of the smallest size are preferred.
"""

from __future__ import annotations

from collections.abc import Mapping

from koordlet.topology.hint import TopologyHint


def _subset_sums(values: list[int]) -> list[int]:
    sums = [0] * (1 << len(values))
    for mask in range(1, len(sums)):
        low = mask & -mask
        sums[mask] = sums[mask ^ low] + values[low.bit_length() - 1]
    return sums


def numa_hints(nodes: tuple[int, ...], capacity: Mapping[int, int], free: Mapping[int, int],
               need: int, usable: frozenset[int] | None = None) -> list[TopologyHint]:
    """Hints for `need` units over `nodes`; only sets inside `usable` (None: all) are hints."""
    caps = _subset_sums([capacity.get(n, 0) for n in nodes])
    frees = _subset_sums([free.get(n, 0) for n in nodes])
    usable_local = 0
    for index, node in enumerate(nodes):
        if usable is None or node in usable:
            usable_local |= 1 << index
    min_size = len(nodes) + 1
    found: list[int] = []
    for local in range(1, len(caps)):
        if caps[local] >= need:
            min_size = min(min_size, local.bit_count())
            if frees[local] >= need and local & usable_local == local:
                found.append(local)
    hints = []
    for local in found:
        mask = 0
        for index, node in enumerate(nodes):
            if local >> index & 1:
                mask |= 1 << node
        hints.append(TopologyHint(mask, local.bit_count() == min_size))
    return hints
