"""A round right after a pod came or went holds the loop no longer, however many pods: the
listing's bookkeeping, the usage round's turns and keys, and the throttling and PSI batches
are made in slices, and the sliced result is the one made without yielding."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any, Callable

from koordlet.metricsadvisor import framework
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.collectors.pod_throttled import PodThrottledCollector
from koordlet.metricsadvisor.collectors.psi import PSICollector
from koordlet.metricsadvisor.framework import SLICE_CHECK, Listing, Round, Turns, drive
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.metricsadvisor.fixtures import context, fake_node, make_pod

# the longest stretch in lines run: sliced, it is the same at both sizes (a slice ends every
# SLICE_CHECK objects); a step over every object in one stretch doubles with the pods
SMALL, LARGE = 8 * SLICE_CHECK, 16 * SLICE_CHECK


def longest_stretch(round_: Round) -> tuple[int, Any]:
    """(the most Python lines the round ran between two yields, what it returned); the
    batches it asks for are read between stretches, not counted."""
    lines = [0]
    longest = 0

    def trace(frame: FrameType, event: str, arg: object) -> Callable[..., Any]:
        if event == "line":
            lines[0] += 1
        return trace

    reply = None
    while True:
        lines[0] = 0
        sys.settrace(trace)
        try:
            request = round_.send(reply)
        except StopIteration as stop:
            return max(longest, lines[0]), stop.value
        finally:
            sys.settrace(None)
        longest = max(longest, lines[0])
        reply = None if request is None else [batch.read() for batch in request]


def changed_round_stretch(tmp_path: Path, make: Callable[[], Any], pods: int) -> int:
    """The longest stretch of the round after one pod came, with `pods` listed before."""
    listed = [make_pod("p%05d" % i, containers=2) for i in range(pods + 1)]
    host, _ = fake_node(tmp_path, [])  # no pod cgroup made: the reads fail, the work is the same
    states = StaticStates(NodeInfo("node-a"), listed[:pods])
    collector = make()
    collector.setup(context(host, states))
    for second in range(11):  # every turn's batches made
        collector.collect(1000.0 + 10 * second)
    states.put(listed[pods])
    stretch, _ = longest_stretch(collector.round(2000.0))
    return stretch


def test_rounds_after_a_listing_change_hold_no_longer_with_more_pods(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(framework, "SLICE_SECONDS", 0.0)  # a slice ends at every check
    for name, make in (("usage", lambda: PodResourceCollector(1.0, 10.0)),
                       ("throttle", lambda: PodThrottledCollector(10.0)),
                       ("psi", lambda: PSICollector(10.0, containers=False))):
        small = changed_round_stretch(tmp_path / (name + "-small"), make, SMALL)
        large = changed_round_stretch(tmp_path / (name + "-large"), make, LARGE)
        assert large <= small * 1.2, (name, small, large)


def test_a_sliced_listing_is_the_one_made_without_yielding(monkeypatch):
    before = [make_pod("p%04d" % i, containers=i % 3) for i in range(4 * SLICE_CHECK)]
    after = before[5:] + [make_pod("new%d" % i, containers=2) for i in range(40)]
    # a container that moved to another dir is another cgroup
    moved = before[7]
    after[2] = make_pod(moved.uid, tier="besteffort", containers=1)
    results = []
    for seconds in (3600.0, 0.0):  # never over, over at every check
        monkeypatch.setattr(framework, "SLICE_SECONDS", seconds)
        made: list[str] = []
        listing: Listing[str, tuple[str, str]] = Listing(lambda d, made=made: made.append(d) or "paths:" + d,
                                                         lambda uid, cid: (uid, cid))
        states = StaticStates(NodeInfo("n"), before)
        first = drive(_as_round(listing.get(states)))
        made.clear()
        for pod in before[:5]:
            states.remove(pod.uid)
        for pod in after:
            states.put(pod)
        yields = []
        gen = listing.get(states)
        try:
            while True:
                yields.append(gen.send(None))
        except StopIteration as stop:
            second = stop.value
        results.append((first, second, sorted(made), len(yields)))
        # what was listed before and still is keeps its paths and entry (the very objects)
        kept = dict(zip(first.objects, zip(first.paths, first.entries)))
        for obj, path, entry in zip(second.objects, second.paths, second.entries):
            if obj in kept:
                assert kept[obj][0] is path and kept[obj][1] is entry
            else:
                assert path == "paths:" + obj[2] and entry == (obj[0], obj[1])
        assert second.dirs == tuple(obj[2] for obj in second.objects)
        assert second.objects == [obj for pod in states.pods() for obj in framework.objects_of(pod)]
    (first_a, second_a, made_a, yields_a), (first_b, second_b, made_b, yields_b) = results
    # each step yields: the old objects indexed, the new ones matched, their columns made
    assert yields_a == 0 and yields_b >= (len(first_b.objects) + len(second_b.objects)) // SLICE_CHECK
    assert (first_a.objects, first_a.dirs, first_a.paths) == (first_b.objects, first_b.dirs, first_b.paths)
    assert (second_a.objects, second_a.dirs, second_a.paths, second_a.entries) == \
        (second_b.objects, second_b.dirs, second_b.paths, second_b.entries)
    assert made_a == made_b and len(made_a) == sum(1 + len(pod.containers) for pod in after[-40:]) + 2


def test_turns_in_slices_are_the_turns(monkeypatch):
    monkeypatch.setattr(framework, "SLICE_SECONDS", 0.0)
    objects = [("p%d" % i, "c%d" % i if i % 3 else "", "d%d" % i) for i in range(300)]
    turns = Turns(10)
    for cycle in range(10):
        expected = [i for i, (_, cid, _) in enumerate(objects) if not cid or turns.due([("", cid, "")], cycle)]
        assert drive(_as_round(turns.due_sliced(objects, cycle))) == expected
        assert turns.due(objects, cycle) == expected


def _as_round(sliced: Any) -> Round:
    out = yield from sliced
    assert (yield None) is None
    return out


class _Pods:
    """An informer whose pods() is the tuple set last, in the order given."""

    def __init__(self, pods: tuple) -> None:
        self.listed = pods

    def pods(self) -> tuple:
        return self.listed


def test_a_listing_makes_again_only_the_pods_that_are_new_objects_in_any_order():
    pods = tuple(make_pod("p%03d" % i, containers=i % 3) for i in range(3 * SLICE_CHECK))
    made: list[str] = []
    listing: Listing[str, tuple[str, str]] = Listing(lambda d: made.append(d) or "paths:" + d,
                                                     lambda uid, cid: (uid, cid))
    states = _Pods(pods)
    first = drive(_as_round(listing.get(states)))
    kept = dict(zip(first.objects, zip(first.paths, first.entries)))
    changed = make_pod(pods[10].uid, containers=2)  # a new object for the same pod: one more container
    shuffled = pods[50:] + pods[:10] + (changed,) + pods[11:50]
    states.listed = shuffled[::-1]
    made.clear()
    second = drive(_as_round(listing.get(states)))
    assert second.objects == [obj for pod in states.listed for obj in framework.objects_of(pod)]
    assert second.dirs == tuple(obj[2] for obj in second.objects)
    for obj, path, entry in zip(second.objects, second.paths, second.entries):
        if obj in kept:
            assert kept[obj][0] is path and kept[obj][1] is entry
        else:
            assert obj[0] == changed.uid and path == "paths:" + obj[2] and entry == (obj[0], obj[1])
    # only the changed pod's objects that were not listed before had paths made
    assert made == [obj[2] for obj in framework.objects_of(changed) if obj not in kept] and made
    assert drive(_as_round(listing.get(states))) is second  # the same tuple: nothing made again
