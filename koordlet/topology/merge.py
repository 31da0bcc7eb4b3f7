"""The hint merge shared by the best-effort, restricted and single-numa-node policies.

kubelet's algorithm: take one hint per resource (every permutation of the cross
product), AND their masks, call the result preferred only if every hint in it was
preferred and all masks were equal; keep the best merged hint: preferred over not,
then the narrowest; among non-preferred ones, the one whose node count is closest
to (not above) the largest of the providers' narrowest counts.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from koordlet.topology.hint import DEFAULT_RESOURCE_KEY, ProviderHints, TopologyHint, is_narrower

HintLists = list[list[TopologyHint]]


def filter_provider_hints(providers_hints: Sequence[ProviderHints]) -> tuple[HintLists, list[str]]:
    """One hint list per resource, with kubelet's stand-ins for "no preference" / "impossible"."""
    all_hints: HintLists = []
    names: list[str] = []
    for hints in providers_hints:
        if not hints:
            all_hints.append([TopologyHint(None, True)])
            names.append(DEFAULT_RESOURCE_KEY)
            continue
        for resource, resource_hints in hints.items():
            names.append(resource)
            if resource_hints is None:
                all_hints.append([TopologyHint(None, True)])
            elif not resource_hints:
                all_hints.append([TopologyHint(None, False)])
            else:
                all_hints.append(list(resource_hints))
    return all_hints, names


def merge_permutation(default_mask: int, permutation: Sequence[TopologyHint]) -> TopologyHint:
    preferred = True
    merged = default_mask
    first: int | None = None
    for hint in permutation:
        if hint.affinity is not None:
            if first is None:
                first = hint.affinity
            elif hint.affinity != first:
                preferred = False
            merged &= hint.affinity
        if not hint.preferred:
            preferred = False
    return TopologyHint(merged, preferred)


def _narrowest_count(hints: Sequence[TopologyHint]) -> int | None:
    narrowest: int | None = None
    for hint in hints:
        if hint.affinity is None:
            continue
        if narrowest is None or is_narrower(hint.affinity, narrowest):
            narrowest = hint.affinity
    return None if narrowest is None else narrowest.bit_count()


def max_of_min_affinity_counts(filtered: HintLists) -> int:
    counts = [c for c in map(_narrowest_count, filtered) if c is not None]
    return max(counts, default=0)


def compare_hints(best_non_preferred: int, current: TopologyHint | None, candidate: TopologyHint) -> TopologyHint | None:
    cand_mask = candidate.affinity or 0
    if cand_mask == 0:
        return current
    if current is None:
        return candidate
    cur_mask = current.affinity or 0
    if current.preferred != candidate.preferred:
        return candidate if candidate.preferred else current
    if current.preferred:
        return candidate if is_narrower(cand_mask, cur_mask) else current
    # Both non-preferred: creep towards best_non_preferred nodes without going over.
    cur_count, cand_count = cur_mask.bit_count(), cand_mask.bit_count()
    if cur_count > best_non_preferred:
        return candidate if is_narrower(cand_mask, cur_mask) else current
    if cur_count == best_non_preferred:
        if cand_count == best_non_preferred and is_narrower(cand_mask, cur_mask):
            return candidate
        return current
    if cand_count > best_non_preferred:
        return current
    if cand_count == best_non_preferred:
        return candidate
    if cand_count != cur_count:
        return candidate if cand_count > cur_count else current
    return candidate if is_narrower(cand_mask, cur_mask) else current


def narrowest_preferred(numa_nodes_mask: int, filtered: HintLists) -> TopologyHint | None:
    """The merge's answer when some permutation merges to a preferred hint, found without
    walking the cross product: a merged hint is preferred only if every hint in it is
    preferred and every mask in it is the same, so the candidates are the masks every
    resource offers as preferred (a preferred "any" hint offers them all)."""
    constrained: list[set[int]] = []
    loose: set[int] = {numa_nodes_mask}  # all-"any" permutation, or one resource naming a mask
    for hints in filtered:
        offered = {h.affinity for h in hints if h.preferred and h.affinity is not None}
        if any(h.preferred and h.affinity is None for h in hints):
            loose |= offered
        else:
            constrained.append(offered)
    candidates = set.intersection(*constrained) if constrained else loose
    best: int | None = None
    for mask in candidates:
        merged = mask & numa_nodes_mask
        if merged and (best is None or is_narrower(merged, best)):
            best = merged
    return None if best is None else TopologyHint(best, True)


def merge_filtered_hints(numa_nodes_mask: int, filtered: HintLists) -> TopologyHint:
    fast = narrowest_preferred(numa_nodes_mask, filtered)
    if fast is not None:
        return fast
    best_non_preferred = max_of_min_affinity_counts(filtered)
    best: TopologyHint | None = None
    for permutation in itertools.product(*(_distinct(hints) for hints in filtered)):
        best = compare_hints(best_non_preferred, best, merge_permutation(numa_nodes_mask, permutation))
    return best if best is not None else TopologyHint(numa_nodes_mask, False)


def _distinct(hints: list[TopologyHint]) -> list[TopologyHint]:
    return list(dict.fromkeys(hints))


def hints_for_all(names: Sequence[str], hint: TopologyHint) -> dict[str, TopologyHint]:
    """The native policies give every resource the same merged hint."""
    if not names:
        return {DEFAULT_RESOURCE_KEY: hint}
    return {name: hint for name in names}
