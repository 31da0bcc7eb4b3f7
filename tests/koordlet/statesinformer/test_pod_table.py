"""PodTable.pods(): the same tuple while no pod changed, never one from before a change."""

from __future__ import annotations

from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo, PodInfo
from tests.koordlet.metricsadvisor.fixtures import make_pod


class _ChangedWhileRead(dict):
    """The table's dict as /metrics' worker thread meets it: the event loop puts a pod right
    after the thread read the values, before it kept them as the snapshot."""

    def __init__(self, states: StaticStates, pod: PodInfo) -> None:
        super().__init__(states._pods)
        self._states, self._pod = states, pod

    def values(self):  # type: ignore[override]
        out = list(super().values())
        if self._pod is not None:
            pod, self._pod = self._pod, None
            self._states.put(pod)  # the loop's change, between the read and the keep
        return out


def test_the_same_tuple_while_no_pod_changed_and_a_new_one_after():
    states = StaticStates(NodeInfo("node-a"), [make_pod("a")])
    first = states.pods()
    assert states.pods() is first
    states.put(make_pod("b"))
    assert states.pods() is not first and {pod.uid for pod in states.pods()} == {"a", "b"}


def test_a_snapshot_read_before_a_change_is_not_kept_past_it():
    states = StaticStates(NodeInfo("node-a"), [make_pod("a")])
    states._pods = _ChangedWhileRead(states, make_pod("b"))
    assert {pod.uid for pod in states.pods()} == {"a"}  # read before the put: fine once
    assert {pod.uid for pod in states.pods()} == {"a", "b"}  # kept, it hid "b" until the next change
