"""KeptPodSum: the sum kept from the informer's events equals the sum over its pods."""

from __future__ import annotations

from koordlet.apis.qos import KoordQoSClass
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo, PodInfo
from koordlet.statesinformer.pod_sum import KeptPodSum
from tests.koordlet.metricsadvisor.fixtures import make_pod


def containers(pod: PodInfo) -> int:
    return len(pod.containers)


def test_kept_sum_follows_adds_updates_and_removes():
    states = StaticStates(NodeInfo("node-a"), [make_pod("a", containers=2)])
    kept = KeptPodSum(states, containers)
    assert kept.total == 2  # the pods known when it was made
    states.put(make_pod("b", containers=3))
    states.put(make_pod("a", KoordQoSClass.BE, containers=1))  # an update: 2 -> 1
    assert kept.total == 4 == sum(map(containers, states.pods()))
    states.remove("b")
    states.remove("missing")  # no event, nothing changes
    assert kept.total == 1 == sum(map(containers, states.pods()))


def test_a_closed_sum_no_longer_follows():
    states = StaticStates(NodeInfo("node-a"))
    kept = KeptPodSum(states, containers)
    states.put(make_pod("a", containers=2))
    kept.close()
    states.put(make_pod("b", containers=3))
    assert kept.total == 2
