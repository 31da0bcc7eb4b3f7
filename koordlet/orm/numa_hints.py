"""kubelet's hint generation for a NUMA-bound quantity (CPU manager / memory manager).

For every non-empty set of NUMA nodes: if the nodes' capacity could hold the request,
the set counts towards the smallest such size; if their free amount holds it now, the
set is a hint. Hints of the smallest size are preferred.

Sets are walked as local bit masks over the node list (bit i = nodes[i]); the tables
that map them to real masks and hint values are built once per machine.
"""

from __future__ import annotations

from collections.abc import Mapping

from koordlet.topology.hint import TopologyHint


def subset_sums(values: list[int]) -> list[int]:
    """sums[local] = sum of values[i] for every bit i of local (built by doubling)."""
    sums = [0]
    for value in values:
        sums += [total + value for total in sums]
    return sums


class NumaMasks:
    def __init__(self, nodes: tuple[int, ...]) -> None:
        self.nodes = nodes
        size = 1 << len(nodes)
        real = [0] * size
        for local in range(1, size):
            low = local & -local
            real[local] = real[local ^ low] | (1 << nodes[low.bit_length() - 1])
        self.counts = [local.bit_count() for local in range(size)]
        # (not preferred, preferred) hint per local mask, shared by every call
        self.hint_values = [(TopologyHint(m, False), TopologyHint(m, True)) for m in real]

    def local_mask(self, nodes: frozenset[int]) -> int:
        return sum(1 << i for i, node in enumerate(self.nodes) if node in nodes)

    def sums(self, per_node: Mapping[int, int]) -> list[int]:
        return subset_sums([per_node.get(n, 0) for n in self.nodes])

    def capacity(self, per_node: Mapping[int, int]) -> tuple[int, ...]:
        """The largest capacity of any set of k nodes, for k = 0..len(nodes): the machine's
        fixed answer to "how few nodes could ever hold this much"."""
        best = [0] * (len(self.nodes) + 1)
        for count, total in zip(self.counts, self.sums(per_node)):
            best[count] = max(best[count], total)
        return tuple(best)

    def hints(self, capacity: tuple[int, ...], free: Mapping[int, int], need: int,
              usable: frozenset[int] | None = None) -> list[TopologyHint]:
        """Hints for `need` units; only sets inside `usable` (None: all nodes) are hints.
        `capacity` is what capacity() returned for the resource's per-node totals."""
        frees = self.sums(free)
        counts = self.counts
        min_size = next((k for k in range(1, len(capacity)) if capacity[k] >= need), 0)
        if usable is None:
            found = [local for local, total in enumerate(frees) if total >= need and local]
        else:
            allowed = self.local_mask(usable)
            found = [local for local, total in enumerate(frees)
                     if total >= need and local and local & allowed == local]
        values = self.hint_values
        return [values[local][counts[local] == min_size] for local in found]


def numa_hints(nodes: tuple[int, ...], capacity: Mapping[int, int], free: Mapping[int, int],
               need: int, usable: frozenset[int] | None = None) -> list[TopologyHint]:
    """One-off form of NumaMasks.hints (tests and callers without a machine-wide table)."""
    masks = NumaMasks(nodes)
    return masks.hints(masks.capacity(capacity), free, need, usable)
