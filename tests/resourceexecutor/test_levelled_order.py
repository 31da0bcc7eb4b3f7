"""The pure ordering decisions: depths, levels, merges and the two-pass schedule."""
from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given, settings

from resourceexecutor.levelled_order import (
    UNLIMITED,
    Step,
    depth_of,
    derive_levels,
    is_ancestor,
    larger_limit,
    levelled_schedule,
    union_cpuset,
)


def test_depth_counts_path_components():
    assert depth_of("") == 0
    assert depth_of("/") == 0
    assert depth_of("kubepods") == 1
    assert depth_of("/kubepods/burstable/pod1/") == 3


def test_ancestor_needs_whole_components():
    assert is_ancestor("kubepods", "kubepods/pod1")
    assert is_ancestor("", "kubepods")
    assert not is_ancestor("kubepods/pod1", "kubepods/pod10")
    assert not is_ancestor("kubepods", "kubepods")
    assert not is_ancestor("kubepods/pod1", "kubepods")


def test_levels_put_parents_before_children_and_keep_caller_order():
    dirs = ["a/b/c", "a", "x/y", "a/b", "x"]
    assert derive_levels(dirs) == [[1, 4], [2, 3], [0]]


def test_union_and_larger_limit():
    assert union_cpuset(frozenset({0}), frozenset({2, 3})) == frozenset({0, 2, 3})
    assert larger_limit(100, 200) == 200
    assert larger_limit(300, 200) == 300
    assert larger_limit(UNLIMITED, 5) == UNLIMITED
    assert larger_limit(5, UNLIMITED) == UNLIMITED


def test_schedule_writes_merged_top_down_then_exact_bottom_up():
    levels = [[0], [1, 2], [3]]
    hierarchical = [True, True, False, True]
    assert levelled_schedule(levels, hierarchical) == [
        (Step.MERGED, 0), (Step.MERGED, 1), (Step.EXACT, 2), (Step.MERGED, 3),
        (Step.EXACT, 3), (Step.EXACT, 1), (Step.EXACT, 0),
    ]


# ---- property: on any tree, the levelled schedule never lets a child hold a CPU its parent lacks

CPUS = frozenset(range(4))


@st.composite
def tree_transitions(draw):
    """A random cgroup tree with a valid old and a valid new cpuset per node."""
    count = draw(st.integers(1, 8))
    parents: list[int | None] = [None]
    for node in range(1, count):
        parents.append(draw(st.integers(0, node - 1)))

    def valid_state():
        state: list[frozenset[int]] = []
        for node in range(count):
            allowed = CPUS if parents[node] is None else state[parents[node]]
            state.append(frozenset(draw(st.sets(st.sampled_from(sorted(allowed)))))
                         if allowed else frozenset())
        return state

    old, new = valid_state(), valid_state()
    return parents, old, new


def _dir_of(node: int, parents: list[int | None]) -> str:
    parts = []
    while node is not None:
        parts.append("n%d" % node)
        node = parents[node]
    return "/".join(reversed(parts))


def _valid(state, parents) -> bool:
    return all(parents[n] is None or state[n] <= state[parents[n]] for n in range(len(state)))


@settings(max_examples=200, deadline=None)
@given(tree_transitions())
def test_levelled_schedule_keeps_every_child_within_its_parent(transition):
    parents, old, new = transition
    dirs = [_dir_of(n, parents) for n in range(len(parents))]
    schedule = levelled_schedule(derive_levels(dirs), [True] * len(dirs))
    state = list(old)
    for step, node in schedule:
        state[node] = union_cpuset(state[node], new[node]) if step is Step.MERGED else new[node]
        assert _valid(state, parents), (step, node, state)
    assert state == new
