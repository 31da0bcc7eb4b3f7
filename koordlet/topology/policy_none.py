"""none: admit everything, allocate without a NUMA hint."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from koordlet.topology.hint import ProviderHints, TopologyHint
from koordlet.topology.policy import PolicyName


@dataclass(frozen=True, slots=True)
class NonePolicy:
    name: PolicyName = PolicyName.NONE

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[dict[str, TopologyHint], bool]:
        return {}, True
