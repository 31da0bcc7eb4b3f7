"""The preferred-hint shortcut must give exactly what walking the whole cross product gives."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.topology.hint import TopologyHint
from koordlet.topology.merge import compare_hints, max_of_min_affinity_counts, merge_filtered_hints, merge_permutation

NODES = 3
ALL = (1 << NODES) - 1

hints = st.builds(TopologyHint, st.one_of(st.none(), st.integers(1, ALL)), st.booleans())
hint_lists = st.lists(st.lists(hints, min_size=1, max_size=4), min_size=0, max_size=4)


def walk_everything(filtered):
    best_np = max_of_min_affinity_counts(filtered)
    best = None
    for permutation in itertools.product(*filtered):
        best = compare_hints(best_np, best, merge_permutation(ALL, permutation))
    return best if best is not None else TopologyHint(ALL, False)


@settings(max_examples=400, deadline=None)
@given(hint_lists)
def test_fast_path_equals_the_full_walk(filtered) -> None:
    assert merge_filtered_hints(ALL, filtered) == walk_everything(filtered)
