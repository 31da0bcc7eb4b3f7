"""The usage round's samples, round after round, as one object at a time gives them: the
figures it keeps per object (last CPU reading, inactive_file) stay with the object through
listing changes, cgroups that cannot be read and come back, and counters that go back."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metriccache.series_ring import SeriesRing
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor import framework
from koordlet.metricsadvisor.collectors import pod_resource
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.framework import append_samples, drive
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo, PodInfo
from tests.koordlet.metricsadvisor.fixtures import context, fake_node, make_pod
from tests.system.fake_trees import add_cgroup, build_proc_tree, build_v2_tree, remove_cgroup, set_cgroup_file

EVERY = 3  # container turns


class Model:
    """What the round gives, object by object: koordlet's working set and CPU rate."""

    def __init__(self) -> None:
        self.cpu: dict[str, int] = {}  # cgroup dir -> the counters its files hold now
        self.memory: dict[str, int] = {}
        self.inactive: dict[str, int] = {}
        self.present: set[str] = set()  # cgroup dirs that exist
        self.last: dict[tuple[str, str], tuple[float, int]] = {}  # object -> (t, ns) last read

    def expected(self, pods: list[PodInfo], cycle: int, now: float) -> dict[SeriesKey, float]:
        out: dict[SeriesKey, float] = {}
        listed = {(obj[0], obj[1]) for pod in pods for obj in framework.objects_of(pod)}
        self.last = {obj: last for obj, last in self.last.items() if obj in listed}  # forgotten when unlisted
        for pod in pods:
            for uid, cid, cgroup in framework.objects_of(pod):
                if cid and zlib.crc32(cid.encode()) % EVERY != cycle % EVERY:
                    continue
                if cgroup not in self.present:
                    continue
                ns, used, gone = self.cpu[cgroup], self.memory[cgroup], self.inactive[cgroup]
                cpu_metric = Metric.CONTAINER_CPU_USAGE_CORES if cid else Metric.POD_CPU_USAGE_CORES
                memory_metric = Metric.CONTAINER_MEMORY_USAGE_BYTES if cid else Metric.POD_MEMORY_USAGE_BYTES
                out[SeriesKey.of(memory_metric, uid, cid)] = float(max(0, used - gone))
                last = self.last.get((uid, cid))
                if last is not None and now > last[0] and ns >= last[1]:
                    out[SeriesKey.of(cpu_metric, uid, cid)] = (ns - last[1]) / 1e9 / (now - last[0])
                self.last[(uid, cid)] = (now, ns)
        return out


def test_usage_rounds_give_what_one_object_at_a_time_gives(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(framework, "SLICE_SECONDS", 0.0)  # a yield at every check
    monkeypatch.setattr(framework, "BOOKKEEPING_CHUNK", 4)  # columns in chunks of 4 objects
    monkeypatch.setattr(pod_resource, "BOOKKEEPING_CHUNK", 4)
    rng = random.Random(18)
    pods = [make_pod("u%03d" % i, containers=2) for i in range(10)]
    host, states = fake_node(tmp_path, pods)
    model = Model()

    def made(pod: PodInfo) -> None:
        for _, _, cgroup in framework.objects_of(pod):
            add_cgroup(host, cgroup)
            model.present.add(cgroup)
            # each its own inactive_file: a figure put at another object's place shows
            model.inactive[cgroup] = rng.randrange(0, 1 << 20)
            set_cgroup_file(host, cgroup, "memory.stat", "total_inactive_file %d\n" % model.inactive[cgroup])
            model.cpu[cgroup] = model.memory[cgroup] = 0

    for pod in pods:
        made(pod)
    collector = PodResourceCollector(1.0, container_interval=float(EVERY))
    collector.setup(context(host, states))
    born = len(pods)
    for cycle in range(60):
        now = 1000.0 + cycle
        listed = list(states.pods())
        for pod in listed:
            for _, _, cgroup in framework.objects_of(pod):
                if cgroup in model.present and rng.random() < 0.8:
                    # mostly forward; now and then backwards (a cgroup re-made under the name)
                    model.cpu[cgroup] = max(0, model.cpu[cgroup] + rng.randrange(-10**8, 10**9))
                    model.memory[cgroup] = rng.randrange(0, 1 << 21)
                    set_cgroup_file(host, cgroup, "cpuacct.usage", str(model.cpu[cgroup]))
                    set_cgroup_file(host, cgroup, "memory.usage_in_bytes", str(model.memory[cgroup]))
        change = rng.random()
        if change < 0.15:  # a new pod
            pod = make_pod("u%03d" % born, containers=2)
            born += 1
            made(pod)
            states.put(pod)
        elif change < 0.25 and listed:  # a pod gone
            pod = rng.choice(listed)
            states.remove(pod.uid)
            remove_cgroup(host, pod.cgroup_parent)
            model.present -= {obj[2] for obj in framework.objects_of(pod)}
        elif change < 0.4 and listed:  # a container's cgroup unreadable for a while, then back
            container = rng.choice(rng.choice(listed).containers)
            if container.cgroup_dir in model.present:
                remove_cgroup(host, container.cgroup_dir)
                model.present.discard(container.cgroup_dir)
            else:
                add_cgroup(host, container.cgroup_dir)
                model.present.add(container.cgroup_dir)
                set_cgroup_file(host, container.cgroup_dir, "memory.stat",
                                "total_inactive_file %d\n" % model.inactive[container.cgroup_dir])
                model.cpu[container.cgroup_dir] = model.memory[container.cgroup_dir] = 0
        expected = model.expected(list(states.pods()), cycle, now)
        assert dict(collector.collect(now)) == expected, cycle
    assert born > len(pods)  # the listing changed on the way


def test_a_usage_rounds_series_go_in_by_place_not_one_by_one(tmp_path: Path, monkeypatch):
    """The round lists every memory series, then every CPU series: the CPU series of an
    object start a round after its memory series, so each run is in one place (timeline,
    first value, count) and the metric cache counts a place's drop once, not per series."""
    pods = [make_pod("u%03d" % i, containers=2) for i in range(20)]
    host, states = fake_node(tmp_path, pods)
    store = MetricStore()
    collector = PodResourceCollector(1.0)  # every container every round: one turn
    collector.setup(context(host, states, store))
    counted: list[SeriesRing] = []
    dropped_by_add = SeriesRing.dropped_by_add

    def counting(ring: SeriesRing, timestamp: float) -> int:
        counted.append(ring)
        return dropped_by_add(ring, timestamp)

    monkeypatch.setattr(SeriesRing, "dropped_by_add", counting)
    for second in range(5):
        append_samples(store, 1000.0 + second, drive(collector.round(1000.0 + second)))
        # a few places (pods' and containers' memory and CPU), not 120 series
        assert len(counted) <= 8, (second, len(counted))
        counted.clear()
    assert len(store.keys(Metric.POD_CPU_USAGE_CORES)) == len(pods)


def test_cgroup_v2_cpu_is_usage_usec_in_ns(tmp_path: Path):
    """On cgroup v2 the CPU time is cpu.stat's usage_usec (x 1000), the memory usage
    memory.current and inactive_file memory.stat's own key."""
    pod = make_pod("u1")
    host = build_v2_tree(tmp_path)
    build_proc_tree(tmp_path)
    for cgroup in ("kubepods", "kubepods/burstable", pod.cgroup_parent, pod.containers[0].cgroup_dir):
        add_cgroup(host, cgroup)
    collector = PodResourceCollector(1.0)
    collector.setup(context(host, StaticStates(NodeInfo("node-a"), [pod])))
    for cgroup in (pod.cgroup_parent, pod.containers[0].cgroup_dir):
        set_cgroup_file(host, cgroup, "memory.current", str(1 << 20))
        set_cgroup_file(host, cgroup, "memory.stat", "anon 0\ninactive_file 4096\nactive_file 0\n")
    readings = []
    for now, usec in ((100.0, 1_000_000), (102.0, 2_500_000)):
        for cgroup in (pod.cgroup_parent, pod.containers[0].cgroup_dir):
            set_cgroup_file(host, cgroup, "cpu.stat", "usage_usec %d\nuser_usec 0\nsystem_usec 0\n" % usec)
        readings.append(dict(collector.collect(now)))
    cid = pod.containers[0].id
    assert readings[0] == {SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, "u1"): float((1 << 20) - 4096),
                           SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, "u1", cid): float((1 << 20) - 4096)}
    assert readings[1][SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "u1")] == 1_500_000 * 1000 / 1e9 / 2.0
    assert readings[1][SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "u1", cid)] == 1_500_000 * 1000 / 1e9 / 2.0
