"""Policy merge tables mirroring kubelet's topology manager cases (pkg/kubelet/cm/topologymanager
policy tests) and Katalyst's numeric policy, on 2 NUMA nodes unless said otherwise."""

from __future__ import annotations

import pytest

from koordlet.topology.hint import DEFAULT_RESOURCE_KEY, TopologyHint, mask_of
from koordlet.topology.policy import MAX_ALLOWABLE_NUMA_NODES, PolicyError, PolicyName, new_policy, parse_policy_name

NODES = (0, 1)


def H(nodes, preferred):  # noqa: N802 - reads like the kubelet tables
    return TopologyHint.of(nodes, preferred)


ANY_T = TopologyHint(None, True)
N0_T, N1_T, N01_T = H([0], True), H([1], True), H([0, 1], True)
N0_F, N1_F, N01_F = H([0], False), H([1], False), H([0, 1], False)

# (name, providers' hints, best hint for best-effort/restricted (admit = hint.preferred for restricted))
COMMON_CASES = [
    ("two providers, one hint each, same mask, both preferred, node 0",
     [{"r1": [N0_T]}, {"r2": [N0_T]}], N0_T),
    ("two providers, one hint each, same mask, both preferred, node 1",
     [{"r1": [N1_T]}, {"r2": [N1_T]}], N1_T),
    ("one provider without hints, one with a preferred single-node hint",
     [None, {"r": [N0_T]}], N0_T),
    ("one provider with two hints, one with a matching single hint",
     [{"r1": [N0_T, N1_T]}, {"r2": [N0_T]}], N0_T),
    ("both with two hints, the narrower preferred one is common",
     [{"r1": [N0_T, N1_T]}, {"r2": [N0_T, N01_F]}], N0_T),
    ("a wider preferred hint beats a narrower non-preferred one",
     [{"r1": [N0_T, N01_T]}, {"r2": [N0_F, N01_T]}], N01_T),
    ("several resources from one provider",
     [{"r1": [N0_T], "r2": [N0_T]}], N0_T),
    ("no overlap: the default mask, not preferred",
     [{"r1": [N0_T]}, {"r2": [N1_T]}], N01_F),
    ("a preferred any-NUMA hint: the default mask, preferred",
     [{"r": [ANY_T]}], N01_T),
    ("a non-preferred any-NUMA hint: the default mask, not preferred",
     [{"r": [TopologyHint(None, False)]}], N01_F),
    ("a provider that cannot place a resource ([]): non-preferred",
     [{"r1": [N0_T]}, {"r2": []}], N0_F),
    ("a provider with no preference for a resource (None): its hint does not constrain",
     [{"r1": None}, {"r2": [N1_T]}], N1_T),
    ("only non-preferred hints: the narrowest that holds the widest minimum",
     [{"r1": [N0_F, N01_F]}, {"r2": [N01_F]}], N01_F),
    ("one hint each, one wider, both preferred: the narrower, not preferred",
     [{"r1": [N0_T]}, {"r2": [N01_T]}], N0_F),
    ("two preferred single-node hints against one non-preferred wide hint",
     [{"r1": [N0_T, N1_T]}, {"r2": [N01_F]}], N0_F),
    ("two non-preferred single-node hints on different nodes",
     [{"r1": [N0_F, N1_F]}, {"r2": [N1_F]}], N1_F),
]


@pytest.mark.parametrize("name,providers,best", COMMON_CASES, ids=[c[0] for c in COMMON_CASES])
def test_best_effort_admits_with_the_best_hint(name, providers, best) -> None:
    hints, admit = new_policy(PolicyName.BEST_EFFORT, NODES).merge(providers)
    assert admit is True
    assert set(hints.values()) == {best}


@pytest.mark.parametrize("name,providers,best", COMMON_CASES, ids=[c[0] for c in COMMON_CASES])
def test_restricted_admits_only_a_preferred_best_hint(name, providers, best) -> None:
    hints, admit = new_policy(PolicyName.RESTRICTED, NODES).merge(providers)
    assert admit is best.preferred
    assert set(hints.values()) == {best}


def test_each_resource_gets_the_merged_hint_under_the_native_policies() -> None:
    hints, _ = new_policy(PolicyName.BEST_EFFORT, NODES).merge([{"cpu": [N0_T]}, {"memory": [N0_T, N01_F]}])
    assert hints == {"cpu": N0_T, "memory": N0_T}


def test_a_provider_without_opinion_is_keyed_default() -> None:
    hints, admit = new_policy(PolicyName.BEST_EFFORT, NODES).merge([None])
    assert admit and hints == {DEFAULT_RESOURCE_KEY: N01_T}


SINGLE_CASES = [
    ("a preferred single-node hint common to both", [{"r1": [N0_T, N01_T]}, {"r2": [N0_T]}], N0_T, True),
    ("only two-node hints: rejected, reported as any", [{"r1": [N01_T]}, {"r2": [N01_T]}],
     TopologyHint(None, False), False),
    ("no overlap between single nodes: rejected", [{"r1": [N0_T]}, {"r2": [N1_T]}],
     TopologyHint(None, False), False),
    ("non-preferred single-node hints are dropped: rejected", [{"r1": [N0_F]}], TopologyHint(None, False), False),
    ("don't-care only: admitted as any", [{"r1": [ANY_T]}, None], TopologyHint(None, True), True),
    ("the narrowest single node wins (lowest id)", [{"r1": [N1_T, N0_T]}], N0_T, True),
    ("unsatisfiable resource ([]) rejects", [{"r1": [N0_T]}, {"r2": []}], TopologyHint(None, False), False),
]


@pytest.mark.parametrize("name,providers,best,admit", SINGLE_CASES, ids=[c[0] for c in SINGLE_CASES])
def test_single_numa_node(name, providers, best, admit) -> None:
    hints, admitted = new_policy(PolicyName.SINGLE_NUMA_NODE, NODES).merge(providers)
    assert admitted is admit
    assert set(hints.values()) == {best}


def test_none_admits_without_hints() -> None:
    assert new_policy(PolicyName.NONE, NODES).merge([{"r": []}]) == ({}, True)


NUMERIC_CASES = [
    ("aligned cpu and memory on the narrowest node",
     [{"cpu": [N0_T, N01_F]}, {"memory": [N0_T, N01_F]}], {"cpu": N0_T, "memory": N0_T}),
    ("cpu and memory cannot align: rejected",
     [{"cpu": [N0_T]}, {"memory": [N1_T]}], None),
    ("an unaligned resource nests around the aligned ones",
     [{"cpu": [N0_T]}, {"memory": [N0_T]}, {"gpu": [N01_T]}], {"cpu": N0_T, "memory": N0_T, "gpu": N01_T}),
    ("an unaligned resource on another node does not nest: rejected",
     [{"cpu": [N0_T]}, {"memory": [N0_T]}, {"gpu": [N1_T]}], None),
    ("an empty hint list rejects",
     [{"cpu": [N0_T]}, {"memory": []}], None),
    ("aligned hints must include a preferred one",
     [{"cpu": [N01_F]}, {"memory": [N01_F]}], None),
    ("more preferred unaligned hints win over a narrower permutation",
     [{"cpu": [N0_T]}, {"memory": [N0_T]}, {"nic": [N0_F, N01_T]}], {"cpu": N0_T, "memory": N0_T, "nic": N01_T}),
]


@pytest.mark.parametrize("name,providers,expected", NUMERIC_CASES, ids=[c[0] for c in NUMERIC_CASES])
def test_numeric(name, providers, expected) -> None:
    hints, admitted = new_policy(PolicyName.NUMERIC, NODES).merge(providers)
    if expected is None:
        assert admitted is False
    else:
        assert admitted is True and hints == expected


def test_numeric_without_providers_admits_any() -> None:
    assert new_policy(PolicyName.NUMERIC, NODES).merge([]) == ({DEFAULT_RESOURCE_KEY: ANY_T}, True)


def test_eight_numa_nodes_is_the_limit_except_for_none() -> None:
    new_policy(PolicyName.SINGLE_NUMA_NODE, tuple(range(MAX_ALLOWABLE_NUMA_NODES)))
    with pytest.raises(PolicyError, match="at most 8 NUMA nodes"):
        new_policy(PolicyName.RESTRICTED, tuple(range(9)))
    new_policy(PolicyName.NONE, tuple(range(16)))


@pytest.mark.parametrize("text", ["", "static", "Best-Effort"])
def test_unknown_or_empty_policy_names_are_refused(text) -> None:
    with pytest.raises(PolicyError, match="unknown topology policy"):
        parse_policy_name(text)


def test_policy_names_are_katalysts() -> None:
    assert [p.value for p in PolicyName] == ["none", "best-effort", "restricted", "single-numa-node", "numeric"]


def test_four_node_best_effort_picks_the_narrowest_common_mask() -> None:
    nodes = (0, 1, 2, 3)
    cpu = [H([2], True), H([0, 1], False), H([2, 3], False), H(nodes, False)]
    mem = [H([2], True), H([2, 3], False), H(nodes, False)]
    hints, admit = new_policy(PolicyName.RESTRICTED, nodes).merge([{"cpu": cpu}, {"memory": mem}])
    assert admit and hints["cpu"] == TopologyHint(mask_of([2]), True)
