"""best-effort: merge the hints, keep the best one, admit whatever it is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from koordlet.topology.hint import ProviderHints, TopologyHint, mask_of
from koordlet.topology.merge import filter_provider_hints, hints_for_all, merge_filtered_hints
from koordlet.topology.policy import PolicyName


@dataclass(frozen=True, slots=True)
class BestEffortPolicy:
    numa_nodes: tuple[int, ...]
    name: PolicyName = PolicyName.BEST_EFFORT

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[dict[str, TopologyHint], bool]:
        filtered, names = filter_provider_hints(providers_hints)
        best = merge_filtered_hints(mask_of(self.numa_nodes), filtered)
        return hints_for_all(names, best), True
