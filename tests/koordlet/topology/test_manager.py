"""The topology manager with hand-made providers: who is asked, in which order allocation
happens, what a rejection says, and the pod scope."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from koordlet.topology.hint import TopologyHint
from koordlet.topology.manager import Scope, TopologyAffinityError, TopologyManager
from koordlet.topology.policy import PolicyName, new_policy
from koordlet.topology.request import ContainerRequest, ContainerType, PodRequest


def container(name: str, cpu: int, kind: ContainerType = ContainerType.MAIN) -> ContainerRequest:
    return ContainerRequest("u", "ns", "p", name, kind, 0, MappingProxyType({"cpu": cpu}))


class OneNodeAtATime:
    """Room for one container per NUMA node (2 nodes): hints shrink as containers are placed."""

    def __init__(self) -> None:
        self.free = [0, 1]
        self.asked: list[str] = []

    async def topology_hints(self, request):
        self.asked.append(request.container_name)
        return {"cpu": [TopologyHint.of([n], True) for n in self.free]}

    async def allocate(self, request, hints):
        (node,) = hints["cpu"].nodes
        self.free.remove(node)


async def test_containers_are_merged_and_allocated_in_turn() -> None:
    provider = OneNodeAtATime()
    manager = TopologyManager(new_policy(PolicyName.SINGLE_NUMA_NODE, (0, 1)), [provider])
    pod = PodRequest("u", "ns", "p", (container("a", 1000), container("b", 1000)))
    admission = await manager.admit(pod, provider.allocate)
    assert admission.container_hints["a"]["cpu"] == TopologyHint.of([0], True)
    assert admission.container_hints["b"]["cpu"] == TopologyHint.of([1], True)
    assert provider.asked == ["a", "b"]


async def test_a_third_container_is_rejected_with_the_reason() -> None:
    provider = OneNodeAtATime()
    manager = TopologyManager(new_policy(PolicyName.RESTRICTED, (0, 1)), [provider])
    pod = PodRequest("u", "ns", "p", (container("a", 1), container("b", 1), container("c", 1)))
    with pytest.raises(TopologyAffinityError) as info:
        await manager.admit(pod, provider.allocate)
    assert str(info.value) == ("pod ns/p container c: topology policy restricted cannot place cpu=1 "
                               "(cpu: no NUMA placement has room; merged cpu=[0,1] not preferred)")


async def test_policy_none_asks_no_provider() -> None:
    provider = OneNodeAtATime()
    allocated = []

    async def allocate(request, hints):
        allocated.append((request.container_name, hints))

    manager = TopologyManager(new_policy(PolicyName.NONE, (0, 1)), [provider])
    await manager.admit(PodRequest("u", "ns", "p", (container("a", 1),)), allocate)
    assert provider.asked == [] and allocated == [("a", {})]


async def test_pod_scope_asks_once_for_the_effective_request() -> None:
    seen = []

    class Recorder:
        async def topology_hints(self, request):
            seen.append(dict(request.requests))
            return {"cpu": [TopologyHint.of([1], True)]}

    allocated = []

    async def allocate(request, hints):
        allocated.append((request.container_name, hints["cpu"]))

    manager = TopologyManager(new_policy(PolicyName.SINGLE_NUMA_NODE, (0, 1)), [Recorder()], Scope.POD)
    pod = PodRequest("u", "ns", "p", (container("init", 3000, ContainerType.INIT),
                                      container("a", 1000), container("b", 1000)))
    await manager.admit(pod, allocate)
    assert seen == [{"cpu": 3000}]  # max(largest init, sum of the others), as kubelet
    assert [name for name, _ in allocated] == ["init", "a", "b"]
    assert {hint for _, hint in allocated} == {TopologyHint.of([1], True)}
