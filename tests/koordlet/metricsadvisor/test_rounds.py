"""Collection rounds at scale: no fd kept whatever the number of cgroups, the loop runs
other callbacks in the middle of a round, and a round gives what collect() gives."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor import framework
from koordlet.metricsadvisor.collectors import psi
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.collectors.pod_throttled import PodThrottledCollector
from koordlet.metricsadvisor.collectors.psi import PSICollector
from koordlet.metricsadvisor.framework import APPEND_SLICE, SLICE_CHECK, Holds, Round, Scheduler, drive_async
from koordlet.metricsadvisor.module import MetricsAdvisorModule
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from koordlet.util.host_facts import HostFacts
from system import file_io
from system.file_io import KeptFdPool, fd_budget
from tests.koordlet.metricsadvisor.fixtures import context, fake_node, make_pod, mark_other_turns
from tests.polling import until

PODS = [make_pod("u%04d" % i, containers=2) for i in range(3 * SLICE_CHECK)]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_fd_budget_is_small_whatever_the_limit():
    assert fd_budget() <= 512
    assert KeptFdPool().max_open <= 512


async def test_rounds_over_many_cgroups_keep_no_fd_open(tmp_path: Path):
    host, states = fake_node(tmp_path, PODS)
    store = MetricStore()
    pool = KeptFdPool()
    module = MetricsAdvisorModule(HostFacts(host), store, states, "node-a",
                                  [PodResourceCollector(0.05), PodThrottledCollector(0.05), PSICollector(0.05)],
                                  fd_pool=pool)
    before = open_fds()
    await module.start()
    try:
        stats = module.scheduler.stats()
        await until(lambda: all(s.runs >= 3 for s in stats.values()))
        assert all(s.errors == 0 for s in stats.values())
        assert len(pool) == 0
        assert open_fds() - before <= 16  # the loop's own, never one per cgroup (3 x 630 files here)
    finally:
        await module.stop()


def _callback_runs_mid_round(round_: Round, loop: asyncio.AbstractEventLoop, seen: list[str]) -> Round:
    """The round, with a callback scheduled once the files are read: it must run before the
    round returns, i.e. in a yield between two slices."""
    reply = None
    while True:
        try:
            request = round_.send(reply)
        except StopIteration as stop:
            seen.append("round done")
            return stop.value
        reply = yield request
        if request is not None:  # the reads are done: parsing starts now
            loop.call_soon(seen.append, "callback")


async def test_a_big_round_lets_the_loop_run_other_callbacks(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(framework, "SLICE_SECONDS", 0.0)  # a slice ends at every check
    host, states = fake_node(tmp_path, PODS)
    ctx = context(host, states)
    loop = asyncio.get_running_loop()
    for collector in (PodResourceCollector(1.0), PodThrottledCollector(1.0), PSICollector(10.0)):
        collector.setup(ctx)
        seen: list[str] = []
        holds = Holds()
        samples = await drive_async(_callback_runs_mid_round(collector.round(100.0), loop, seen), holds)
        assert seen == ["callback", "round done"], collector.name
        assert holds.count > 2  # read request, slices, the end
        assert samples or collector.name == "podthrottled"  # throttling needs two readings


async def test_a_round_gives_what_collect_gives(tmp_path: Path):
    host, states = fake_node(tmp_path, PODS)
    inline, sliced = PodResourceCollector(1.0), PodResourceCollector(1.0)
    inline.setup(context(host, states))
    sliced.setup(context(host, states))
    for now in (100.0, 101.0, 102.0):
        expected = inline.collect(now)
        assert framework.pairs_of(await drive_async(sliced.round(now), Holds())) == expected
    assert len(expected) == 2 * len(PODS) * 3  # cpu and memory of each pod and container


async def test_the_scheduler_records_the_longest_hold(tmp_path: Path):
    host, states = fake_node(tmp_path, PODS)
    collector = PSICollector(0.05)
    collector.setup(context(host, states))
    scheduler = Scheduler(MetricStore())
    scheduler.add(collector)
    scheduler.start()
    try:
        stats = scheduler.stats()["psi"]
        await until(lambda: stats.runs >= 1)
        assert 0 < stats.last_longest_hold_seconds <= stats.last_wall_seconds
        assert stats.last_cpu_seconds > 0
    finally:
        await scheduler.stop()


class _ManySamples(framework.RoundCollector):
    """A round that returns many samples at once, without a slice of its own."""

    name = "many"

    def round(self, now: float) -> Round:
        yield from ()
        return [(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p%d" % i), 1.0) for i in range(3 * APPEND_SLICE)]


class _LoggedStore(MetricStore):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def append_at(self, timestamp, pairs) -> None:
        self.log.append("append %d" % len(pairs))
        super().append_at(timestamp, pairs)


async def test_a_rounds_samples_go_into_the_cache_in_slices_with_the_loop_run_between():
    log: list[str] = []
    store = _LoggedStore(log)
    scheduler = Scheduler(store)
    scheduler.add(_ManySamples(0.05))
    task = asyncio.create_task(mark_other_turns(log))
    scheduler.start()
    try:
        await until(lambda: scheduler.stats()["many"].runs >= 1)
    finally:
        await scheduler.stop()
        task.cancel()
    first_round = log[:log.index("append %d" % APPEND_SLICE) + 6]
    assert first_round == ["append %d" % APPEND_SLICE, "other"] * 3
    assert len(store.keys(Metric.POD_CPU_USAGE_CORES)) == 3 * APPEND_SLICE


_COLUMN_KEYS = tuple(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p%d" % i) for i in range(2 * APPEND_SLICE + 7))


class _ManyColumns(framework.RoundCollector):
    """A round whose samples are columns, every third position without a sample."""

    name = "columns"

    def round(self, now: float) -> Round:
        yield from ()
        return framework.Columns(_COLUMN_KEYS, [None if i % 3 == 0 else now + i for i in range(len(_COLUMN_KEYS))])


class _ColumnsLoggedStore(MetricStore):
    def __init__(self, log: list[tuple[int, int]]) -> None:
        super().__init__()
        self.log = log

    def append_columns(self, timestamp, keys, values, start=0, stop=None) -> None:
        self.log.append((start, stop))
        super().append_columns(timestamp, keys, values, start, stop)


async def test_columns_go_into_the_cache_in_slices_of_positions():
    log: list[tuple[int, int]] = []
    store = _ColumnsLoggedStore(log)
    scheduler = Scheduler(store)
    scheduler.add(_ManyColumns(0.05))
    scheduler.start()
    try:
        await until(lambda: scheduler.stats()["columns"].runs >= 1)
    finally:
        await scheduler.stop()
    assert log[:3] == [(0, APPEND_SLICE), (APPEND_SLICE, 2 * APPEND_SLICE), (2 * APPEND_SLICE, 3 * APPEND_SLICE)]
    stats = scheduler.stats()["columns"]
    assert stats.samples == stats.runs * (len(_COLUMN_KEYS) - (len(_COLUMN_KEYS) + 2) // 3)  # samples, not positions
    landed = {key: last[1] - last[0] for key in _COLUMN_KEYS if (last := store.latest_value(key)) is not None}
    assert landed == {key: float(i) for i, key in enumerate(_COLUMN_KEYS) if i % 3}


def test_columns_reach_a_cache_without_append_columns_as_pairs():
    class PairsOnly:
        def __init__(self) -> None:
            self.got: list[tuple[SeriesKey, float, float]] = []

        def append(self, samples) -> None:
            self.got += [(s.key, s.timestamp, s.value) for s in samples]

    cache = PairsOnly()
    columns = framework.Columns(_COLUMN_KEYS[:4], [None, 1.0, 2.0, None])
    framework.append_samples(cache, 5.0, columns, 1, 3)  # type: ignore[arg-type]
    framework.append_samples(cache, 6.0, columns, 3, 9)  # type: ignore[arg-type]
    assert cache.got == [(_COLUMN_KEYS[1], 5.0, 1.0), (_COLUMN_KEYS[2], 5.0, 2.0)]
    assert framework.pairs_of(columns) == [(_COLUMN_KEYS[1], 1.0), (_COLUMN_KEYS[2], 2.0)] and len(columns) == 2


def test_psi_of_pods_only_reads_a_third(tmp_path: Path):
    host, states = fake_node(tmp_path, PODS[:3])
    both, pods_only = PSICollector(10.0), PSICollector(10.0, containers=False)
    both.setup(context(host, states))
    pods_only.setup(context(host, states))
    both.collect(1.0)
    pods_only.collect(1.0)
    assert {ident for ident in both.snapshot if not ident[1]} == set(pods_only.snapshot)
    assert len(both.snapshot) == 1 + 3 * 3  # node, then each pod and its 2 containers


def test_psi_values_follow_the_files_when_cgroups_share_a_text(tmp_path: Path):
    pods = PODS[:2]
    host, states = fake_node(tmp_path, pods)
    collector = PSICollector(10.0)
    collector.setup(context(host, states))
    collector.collect(1.0)
    same = {ident: collector.snapshot[ident]["cpu"] for ident in collector.snapshot if ident[0]}
    assert len(set(same.values())) == 1  # every fake cgroup prints the same text
    busy = "some avg10=12.50 avg60=3.00 avg300=1.00 total=5\nfull avg10=2.25 avg60=1.00 avg300=0.50 total=2\n"
    (host.cgroup("unified") / pods[1].cgroup_parent / "cpu.pressure").write_text(busy)
    collector.collect(11.0)
    assert collector.snapshot[(pods[1].uid, "")]["cpu"] == ((12.5, 3.0, 1.0), (2.25, 1.0, 0.5))
    assert collector.snapshot[(pods[0].uid, "")]["cpu"] == same[(pods[0].uid, "")]


def test_psi_follows_the_listing_and_parses_only_texts_that_changed(tmp_path: Path, monkeypatch):

    pods = PODS[:3]
    host, states = fake_node(tmp_path, pods)
    collector = PSICollector(10.0, containers=False)
    collector.setup(context(host, states))
    collector.collect(1.0)
    parsed = []
    real = psi.psi_averages
    monkeypatch.setattr(psi, "psi_averages", lambda text: parsed.append(text) or real(text))
    collector.collect(11.0)
    assert parsed == []  # the same texts as the last round: the last round's samples again
    busy = "some avg10=7.50 avg60=3.00 avg300=1.00 total=5\nfull avg10=1.25 avg60=1.00 avg300=0.50 total=2\n"
    (host.cgroup("unified") / pods[2].cgroup_parent / "memory.pressure").write_text(busy)
    states.remove(pods[0].uid)
    collector.collect(21.0)
    assert parsed == [busy]
    assert {uid for uid, _ in collector.snapshot if uid} == {pods[1].uid, pods[2].uid}
    assert collector.snapshot[(pods[2].uid, "")]["memory"] == ((7.5, 3.0, 1.0), (1.25, 1.0, 0.5))


def test_steady_usage_rounds_make_no_new_batch(tmp_path: Path, monkeypatch):
    """Once every turn has run, the usage round reuses its batches (paths, anchors and C
    arrays made once per listing), memory.stat ones included."""
    host, states = fake_node(tmp_path, PODS[:12])
    collector = PodResourceCollector(1.0, 10.0)
    collector.setup(context(host, states))
    made = []
    real = framework.ValueBatch
    monkeypatch.setattr(framework, "ValueBatch", lambda specs: made.append(len(specs)) or real(specs))
    for second in range(20):  # each turn and each memory.stat share: twice
        collector.collect(1000.0 + second)
    first_pass = len(made)
    for second in range(20, 40):
        collector.collect(1000.0 + second)
    assert first_pass > 0
    assert len(made) == first_pass


def test_batches_kept_are_bounded():
    batches = framework.Batches()
    dirs = ("a", "b")
    made = [batches.get(dirs, i, lambda: object()) for i in range(framework.Batches.MAX_BATCHES + 5)]
    assert batches.get(dirs, 0, lambda: "new") == "new"  # the oldest were dropped
    assert batches.get(dirs, 0, lambda: "newer") == "new"
    assert len(made) == framework.Batches.MAX_BATCHES + 5


def test_a_listing_keeps_what_it_made_for_objects_still_listed():
    pods = [make_pod("a"), make_pod("b", containers=2)]
    states = StaticStates(NodeInfo("n"), pods)
    made: list[str] = []
    listing = framework.Listing(lambda d: made.append(d) or ["path of " + d], lambda uid, cid: [uid, cid])
    first: framework.Listed = framework.drive(listing.get(states))  # type: ignore[arg-type]
    entries = {obj: (paths, entry) for obj, paths, entry in zip(first.objects, first.paths, first.entries)}
    moved = dataclasses.replace(pods[1].containers[0], cgroup_dir="elsewhere/" + pods[1].containers[0].id)
    states.put(dataclasses.replace(pods[1], containers=(moved,) + pods[1].containers[1:]))
    states.put(make_pod("c"))
    states.remove("a")
    del made[:]
    second: framework.Listed = framework.drive(listing.get(states))  # type: ignore[arg-type]
    assert [obj[0] for obj in second.objects] == [obj[0] for pod in states.pods() for obj in framework.objects_of(pod)]
    for obj, paths, entry in zip(second.objects, second.paths, second.entries):
        old = entries.get(obj)
        if old is None:  # a new pod, or a container in another dir: a new entry, its paths made
            assert entry == [obj[0], obj[1]] and paths == ["path of " + obj[2]] and obj[2] in made
        else:  # the very objects made for it before
            assert paths is old[0] and entry is old[1] and obj[2] not in made
    assert {obj[0] for obj in second.objects} == {"b", "c"} and "elsewhere/" + moved.id in made


def test_psi_round_gives_the_nodes_columns_and_the_pods_in_its_snapshot(tmp_path: Path):
    """The metric cache gets the node's six avg10 figures, the same keys tuple each round
    (looked up once); the pods' readings are only in the snapshot, and follow the listing."""
    pods = PODS[:2]
    host, states = fake_node(tmp_path, pods)
    collector = PSICollector(10.0, containers=False)
    collector.setup(context(host, states))
    first = framework.drive(collector.round(1.0))
    assert isinstance(first, framework.Columns)
    assert first.keys is psi.NODE_KEYS and len(first.values) == len(psi.NODE_KEYS)
    assert {ident for ident in collector.snapshot} == {("", "")} | {(pod.uid, "") for pod in pods}
    states.remove(pods[0].uid)
    second = framework.drive(collector.round(11.0))
    assert isinstance(second, framework.Columns) and second.keys is first.keys
    assert {ident for ident in collector.snapshot} == {("", ""), (pods[1].uid, "")}
    # the pairs are what the keys and values say: each present value under its own key
    pairs = dict(framework.pairs_of(second))
    assert pairs == {key: value for key, value in zip(second.keys, second.values) if value is not None}
    assert pairs and all(key.metric == "node_psi" for key in pairs)


def test_a_slice_is_measured_from_the_drivers_resume_not_from_each_piece(monkeypatch):
    """Pieces sliced one after the other in a round (listing, due lists, batches, parsing)
    add up to one slice: a Slices made late in a stretch already counts the stretch."""
    monkeypatch.setattr(framework, "SLICE_SECONDS", 0.5)
    framework._resumed_now()
    assert not framework.Slices().over(0)
    framework._RESUMED[0] -= 1.0  # resumed a second ago (the next resume sets it again)
    assert framework.Slices().over(0)  # a piece begun just now is over at its first check
    assert not framework.Slices().over(1)  # the clock is read every SLICE_CHECK objects only
    resumes = []

    def pieces() -> Round:
        for _ in range(3):
            resumes.append(framework._RESUMED[0])
            yield None
        return []

    framework.drive(pieces())
    assert resumes == sorted(resumes) and len(set(resumes)) == 3  # the driver stamps each resume


def test_psi_reads_into_an_output_sized_for_pressure_files(tmp_path: Path, monkeypatch):
    """The PSI batch asks the C reader for room for pressure files (~100 bytes), not for
    FileBatch's default 256 a file: at 1,000 pods its 3,000 files' output was ~0.8 MiB."""
    monkeypatch.setattr(file_io, "_OUTPUTS", [])  # no buffer grown by other reads
    host, states = fake_node(tmp_path, PODS)
    collector = PSICollector(10.0)
    collector.setup(context(host, states))
    collector.collect(1.0)
    files = 3 * (len(collector.snapshot) - 1)  # the node's are read from /proc
    assert files == 3 * 3 * len(PODS)
    assert max(output.cap for output in file_io._OUTPUTS) < files * 200
