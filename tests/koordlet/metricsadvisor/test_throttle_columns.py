"""The throttling round's ratios, round after round, as rates.throttled_ratio gives them
object by object: the last counts stay with each object through listing changes, cgroups
that cannot be read (the next reading starts afresh) and counters that go back."""

from __future__ import annotations

import random
from pathlib import Path

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor import framework
from koordlet.metricsadvisor.collectors.pod_throttled import PodThrottledCollector
from koordlet.metricsadvisor.rates import throttled_ratio
from koordlet.statesinformer.model import PodInfo
from tests.koordlet.metricsadvisor.fixtures import context, fake_node, make_pod
from tests.system.fake_trees import add_cgroup, remove_cgroup, set_cgroup_file


def test_throttling_rounds_give_what_throttled_ratio_gives(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(framework, "SLICE_SECONDS", 0.0)  # a yield at every check
    monkeypatch.setattr(framework, "BOOKKEEPING_CHUNK", 4)  # columns in chunks of 4 objects
    rng = random.Random(18)
    pods = [make_pod("u%03d" % i, containers=2) for i in range(10)]
    host, states = fake_node(tmp_path, pods)
    counts: dict[str, tuple[int, int]] = {}  # cgroup dir -> what its cpu.stat says now
    present: set[str] = set()
    last: dict[tuple[str, str], tuple[int, int]] = {}  # object -> its counts last read

    def write(cgroup: str) -> None:
        set_cgroup_file(host, cgroup, "cpu.stat", "nr_periods %d\nnr_throttled %d\nthrottled_time 0\n" % counts[cgroup])

    def made(pod: PodInfo) -> None:
        for _, _, cgroup in framework.objects_of(pod):
            add_cgroup(host, cgroup)
            present.add(cgroup)
            counts[cgroup] = (0, 0)
            write(cgroup)

    for pod in pods:
        made(pod)
    collector = PodThrottledCollector(10.0)
    collector.setup(context(host, states))

    def check(cycle: int) -> None:
        expected: dict[SeriesKey, float] = {}
        objects = [obj for pod in states.pods() for obj in framework.objects_of(pod)]
        listed = {obj[:2] for obj in objects}
        for obj in [obj for obj in last if obj not in listed]:  # forgotten when unlisted
            del last[obj]
        for uid, cid, cgroup in objects:
            if cgroup not in present:
                last.pop((uid, cid), None)
                continue
            before = last.get((uid, cid))
            last[(uid, cid)] = counts[cgroup]
            ratio = None if before is None else throttled_ratio(before, counts[cgroup])
            if ratio is not None:
                metric = Metric.CONTAINER_CPU_THROTTLED_RATIO if cid else Metric.POD_CPU_THROTTLED_RATIO
                expected[SeriesKey.of(metric, uid, cid)] = ratio
        assert dict(collector.collect(1000.0 + 10 * cycle)) == expected, cycle

    born = len(pods)
    for cycle in range(50):
        for cgroup in present:
            if rng.random() < 0.8:  # mostly forward, now and then back, or no period at all
                periods, throttled = counts[cgroup]
                step = rng.choice([0, 0, 3, 50, 100, -20])
                counts[cgroup] = (max(0, periods + step), max(0, throttled + rng.randrange(-5, max(1, step + 1))))
                write(cgroup)
        listed = list(states.pods())
        change = rng.random()
        if change < 0.15:
            pod = make_pod("u%03d" % born, containers=2)
            born += 1
            made(pod)
            states.put(pod)
        elif change < 0.25 and listed:
            pod = rng.choice(listed)
            states.remove(pod.uid)
            remove_cgroup(host, pod.cgroup_parent)
            present.difference_update(obj[2] for obj in framework.objects_of(pod))
        elif change < 0.4 and listed:
            container = rng.choice(rng.choice(listed).containers)
            if container.cgroup_dir in present:
                remove_cgroup(host, container.cgroup_dir)
                present.discard(container.cgroup_dir)
            else:
                add_cgroup(host, container.cgroup_dir)
                present.add(container.cgroup_dir)
                write(container.cgroup_dir)
        check(cycle)
    # a container's cgroup gone for a round and back: its next reading starts afresh
    container = next(iter(states.pods())).containers[0]
    remove_cgroup(host, container.cgroup_dir)
    present.discard(container.cgroup_dir)
    check(50)
    add_cgroup(host, container.cgroup_dir)
    present.add(container.cgroup_dir)
    counts[container.cgroup_dir] = (counts[container.cgroup_dir][0] + 100, counts[container.cgroup_dir][1] + 10)
    write(container.cgroup_dir)
    check(51)
    check(52)
    assert born > len(pods)
