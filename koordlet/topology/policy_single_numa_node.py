"""single-numa-node: only "don't care" hints and preferred one-node hints take part;
admit only a preferred result. A result spanning every node is reported as "any"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from koordlet.topology.hint import ProviderHints, TopologyHint, mask_of
from koordlet.topology.merge import HintLists, filter_provider_hints, hints_for_all, merge_filtered_hints
from koordlet.topology.policy import PolicyName


def single_numa_hints(filtered: HintLists) -> HintLists:
    return [[h for h in hints if h.preferred and (h.affinity is None or h.affinity.bit_count() == 1)]
            for hints in filtered]


@dataclass(frozen=True, slots=True)
class SingleNumaNodePolicy:
    numa_nodes: tuple[int, ...]
    name: PolicyName = PolicyName.SINGLE_NUMA_NODE

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[dict[str, TopologyHint], bool]:
        filtered, names = filter_provider_hints(providers_hints)
        all_nodes = mask_of(self.numa_nodes)
        best = merge_filtered_hints(all_nodes, single_numa_hints(filtered))
        if best.affinity == all_nodes:
            best = TopologyHint(None, best.preferred)
        return hints_for_all(names, best), best.preferred
