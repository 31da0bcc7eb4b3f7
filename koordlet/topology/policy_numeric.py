"""numeric (Katalyst's own): resources named in align_resources must get the same NUMA
set with at least one preferred hint among them; every other hint must nest (each
wider mask contains the narrower ones). Among fitting permutations prefer more
preferred non-aligned hints, then the smallest widest mask. Each resource keeps its
own hint. Any resource with no possible placement rejects the pod."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from koordlet.topology.hint import DEFAULT_RESOURCE_KEY, ProviderHints, TopologyHint
from koordlet.topology.merge import HintLists, filter_provider_hints
from koordlet.topology.policy import PolicyName


def _aligned(a: TopologyHint, b: TopologyHint) -> bool:
    if a.affinity is None and b.affinity is None:
        return a.preferred == b.preferred
    if a.affinity is None:
        return a.preferred
    if b.affinity is None:
        return b.preferred
    return a.affinity == b.affinity


def _nested(permutation: Sequence[TopologyHint]) -> bool:
    masks = sorted((h.affinity for h in permutation if h.affinity is not None), key=int.bit_count)
    return all(small & big == small for small, big in zip(masks, masks[1:]))


def _preferred_outside(permutation: Sequence[TopologyHint], align: frozenset[int]) -> int:
    return sum(1 for i, h in enumerate(permutation) if i not in align and h.preferred)


def _widest(permutation: Sequence[TopologyHint]) -> int:
    return max((h.count for h in permutation), default=0)


def best_numeric_permutation(filtered: HintLists, align_indexes: Sequence[int]) -> tuple[TopologyHint, ...] | None:
    align_set = frozenset(align_indexes)
    best: tuple[TopologyHint, ...] | None = None
    for permutation in itertools.product(*filtered):
        if align_indexes:
            aligned = [permutation[i] for i in align_indexes]
            if not all(_aligned(a, b) for a, b in zip(aligned, aligned[1:])):
                continue
            if not any(h.preferred for h in aligned):
                continue
        if not _nested(permutation):
            continue
        if best is None:
            best = permutation
            continue
        if _preferred_outside(permutation, align_set) > _preferred_outside(best, align_set):
            best = permutation
        elif _widest(permutation) < _widest(best):
            best = permutation
    return best


@dataclass(frozen=True, slots=True)
class NumericPolicy:
    align_resources: tuple[str, ...] = ("cpu", "memory")
    name: PolicyName = PolicyName.NUMERIC

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[dict[str, TopologyHint], bool]:
        if not providers_hints:
            return {DEFAULT_RESOURCE_KEY: TopologyHint(None, True)}, True
        for hints in providers_hints:
            if hints and any(v is not None and len(v) == 0 for v in hints.values()):
                return {}, False
        filtered, names = filter_provider_hints(providers_hints)
        index = {name: i for i, name in enumerate(names)}
        align = [index[name] for name in self.align_resources if name in index]
        best = best_numeric_permutation(filtered, align)
        if best is None or len(best) != len(names):
            return {}, False
        return dict(zip(names, best)), True
