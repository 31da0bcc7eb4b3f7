"""Series written in the same rounds share their timestamps; whatever the rounds do (series
that skip rounds, late, repeated or out-of-step samples, capacity, expiry, forgotten
series), every reader answers what a plain sorted list of each series' samples gives: the
samples of the last `retention` seconds before the newest, at most `capacity` of them."""

from __future__ import annotations

import sys
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.metriccache.aggregation import nearest_rank
from koordlet.metriccache.api import Metric, NotEnoughData, Sample, SeriesKey
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.store import MetricStore
from tests.koordlet.metriccache.reference import sequential_mean

T0 = 1_700_000_000.0
KEYS = [SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "p%d" % (i // 2), "c%d" % i) for i in range(4)] + [
    SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p%d" % i) for i in range(2)]
POLICY = RetentionPolicy(node_seconds=60, pod_seconds=20, container_seconds=8)

# one step: ("round", second, present series, values) | ("late", series, second, value) | ("expire", second)
#           | ("forget", series)
# seconds between rounds: mostly in step, sometimes a gap longer than a container's retention
round_step = st.tuples(st.just("round"), st.sampled_from([0, 0, 1, 2, 3, 12]),
                       st.lists(st.booleans(), min_size=6, max_size=6),
                       st.lists(st.integers(-1000, 1000), min_size=6, max_size=6))
late_step = st.tuples(st.just("late"), st.integers(0, 5), st.integers(-40, 0), st.integers(-1000, 1000))
expire_step = st.tuples(st.just("expire"), st.integers(0, 30))
forget_step = st.tuples(st.just("forget"), st.integers(0, 5))
steps = st.lists(st.one_of(round_step, round_step, round_step, late_step, expire_step, forget_step), max_size=120)


class Model:
    """Each series as a dict timestamp -> value, trimmed as the store promises."""

    def __init__(self) -> None:
        self.series: dict[SeriesKey, dict[float, float]] = {}
        self.gone: set[str] = set()  # the store's clock stands still: forgotten pods and containers stay gone

    def put(self, key: SeriesKey, timestamp: float, value: float) -> None:
        if key not in self.series and (key.pod_uid in self.gone or key.container_id in self.gone):
            return
        points = self.series.setdefault(key, {})
        retention = POLICY.seconds(key)
        if points and timestamp < max(points) - retention:
            return
        points[timestamp] = value
        newest = max(points)
        for old in sorted(points)[:-POLICY.capacity(key)] + [t for t in points if t < newest - retention]:
            points.pop(old, None)

    def expire(self, now: float) -> None:
        for key in list(self.series):
            points = self.series[key]
            for old in [t for t in points if t < now - POLICY.seconds(key)]:
                del points[old]
            if not points:
                del self.series[key]


def check(store: MetricStore, model: Model, now: float) -> None:
    assert len(store) == len(model.series)
    assert store.sample_count() == sum(len(points) for points in model.series.values())
    for key in KEYS:
        points = model.series.get(key, {})
        latest = store.latest(key)
        assert (latest and (latest.timestamp, latest.value)) == (max(points.items()) if points else None)
        for start, end in ((now - 5, now), (now - 19, now - 3), (T0 - 100, now + 1)):
            inside = sorted((t, v) for t, v in points.items() if start <= t <= end)
            try:
                whole = store.aggregate(key, start, end, 0.0)
            except NotEnoughData:
                assert not inside
                continue
            values = [v for _, v in inside]
            assert (whole.count, whole.first_timestamp, whole.last_timestamp, whole.last) == (
                len(inside), inside[0][0], inside[-1][0], values[-1])
            assert whole.avg == sequential_mean(values)
            assert whole.p99 == nearest_rank(sorted(values), 990) == store.percentile(key, start, end, 990)
            assert store.mean(key, start, end, 0.0).avg == whole.avg


@settings(max_examples=300, deadline=None)
@given(steps)
def test_shared_timestamps_answer_as_separate_series(steps):
    store = MetricStore(POLICY, clock=lambda: T0)
    model = Model()
    second = 0.0
    for step in steps:
        if step[0] == "round":
            _, advance, present, values = step
            second += advance + 0.25  # each round its own timestamp, rounds may repeat one
            now = T0 + second
            batch = [(KEYS[i], float(values[i])) for i in range(6) if present[i]]
            store.append_at(now, batch)
            for key, value in batch:
                model.put(key, now, value)
        elif step[0] == "late":
            _, index, back, value = step
            when = T0 + second + back * 0.5
            store.append([Sample(KEYS[index], when, float(value))])
            model.put(KEYS[index], when, float(value))
        elif step[0] == "expire":
            now = T0 + second + step[1]
            store.expire(now)
            model.expire(now)
        else:
            key = KEYS[step[1]]
            store.forget_container(key.pod_uid, key.container_id) if key.container_id else store.forget_pod(
                key.pod_uid)
            model.gone.add(key.container_id or key.pod_uid)
            for gone in [k for k in model.series if k.pod_uid == key.pod_uid and (
                    not key.container_id or k.container_id == key.container_id)]:
                del model.series[gone]
        check(store, model, T0 + second)


def test_series_of_one_collector_share_one_timeline_and_a_stale_one_lets_it_go():
    store = MetricStore(POLICY, clock=lambda: T0)
    for second in range(200):
        store.append_at(T0 + second, [(key, float(second)) for key in KEYS[:4] if second < 50 or key != KEYS[0]])
    rings = [store._series[key] for key in KEYS[:4]]
    assert len({id(ring.timeline) for ring in rings[1:]}) == 1  # one copy of the timestamps for three series
    assert rings[0].timeline is not rings[1].timeline  # stopped at 50 s: moved to its own copy
    capacity = POLICY.capacity(KEYS[1])
    assert len(rings[1].timeline.ts) <= capacity + capacity // 8 + 16  # not held back by the stale series
    assert store.aggregate(KEYS[0], T0, T0 + 200, 0.0).last_timestamp == T0 + 49
    assert store.aggregate(KEYS[1], T0, T0 + 200, 0.0).count == 9 < capacity  # the 8 s of retention


def test_a_timeline_read_by_one_series_holds_that_series_and_a_shared_one_a_dict_of_them():
    store = MetricStore(POLICY, clock=lambda: T0)
    for second in range(30):  # KEYS[0] every round, KEYS[1] every other: it falls out of step
        store.append_at(T0 + second, [(key, float(second)) for key in KEYS[:3] if key != KEYS[1] or second % 2])
    shared, own = store._series[KEYS[0]].timeline, store._series[KEYS[1]].timeline
    assert shared is store._series[KEYS[2]].timeline and shared is not own
    # a dict used as a set: its entries take less than a set's table (bench/metric_cache_memory.py)
    assert shared.users == {store._series[KEYS[0]]: None, store._series[KEYS[2]]: None}
    assert own.users is store._series[KEYS[1]]  # no set for a single reader
    assert store.forget_container("p0", "c1") == 1
    assert own.users is None and own.readers() == []
    assert store.forget_container("p1", "c2") == 1
    assert not shared.shared() and shared.readers() == [store._series[KEYS[0]]]
    assert [sample.value for sample in [store.latest(KEYS[0])] if sample] == [29.0]
    store.append_at(T0 + 30, [(KEYS[0], 30.0)])
    assert store.aggregate(KEYS[0], T0, T0 + 30, 0.0).count == 9  # its 8 s of retention, 22 .. 30 s


def test_series_written_every_tenth_round_of_another_timeline_leave_it_for_one_shared_timeline():
    """A turn's container series are made in a round of the pods' (on their timeline) and
    then written every 10 s: they move off together, onto one timeline; a series made in
    another round has other timestamps and moves elsewhere."""
    pods = [SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p%d" % i) for i in range(2)]
    turn = [SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "p%d" % (i % 2), "c%d" % i) for i in range(6)]
    late = SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "p0", "late")
    policy = RetentionPolicy(node_seconds=600, pod_seconds=300, container_seconds=120, container_sample_interval=10)
    store = MetricStore(policy, clock=lambda: T0)
    for second in range(61):
        batch = [(key, float(second)) for key in pods]
        if second % 10 == 0:
            batch += [(key, second + n / 10) for n, key in enumerate(turn)]
        if second >= 3 and second % 10 == 3:
            batch.append((late, float(second)))
        store.append_at(T0 + second, batch)
    timelines = {id(store._series[key].timeline) for key in turn}
    assert len(timelines) == 1 and store._series[turn[0]].timeline is not store._series[pods[0]].timeline
    assert store._series[late].timeline is not store._series[turn[0]].timeline
    assert list(store._series[turn[0]].timeline.ts) == [T0 + s for s in range(0, 61, 10)]
    for n, key in enumerate(turn):
        whole = store.aggregate(key, T0, T0 + 60, 0.0)
        assert (whole.count, whole.first_timestamp, whole.last_timestamp, whole.last) == (7, T0, T0 + 60, 60 + n / 10)
        assert whole.avg == sequential_mean([s + n / 10 for s in range(0, 61, 10)])
    late_whole = store.aggregate(late, T0, T0 + 60, 0.0)
    assert (late_whole.count, late_whole.first_timestamp, late_whole.last_timestamp) == (6, T0 + 3, T0 + 53)
    assert store.aggregate(pods[1], T0, T0 + 60, 0.0).count == 61


def test_a_shared_timeline_sizes_its_readers_again_when_most_have_left():
    # a turn's container series are made in a round of the pods' timeline and leave it: the
    # entries they held must not stay allocated in the pods' timeline
    keys = [SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p%d" % i) for i in range(2000)]
    store = MetricStore(POLICY, clock=lambda: T0)
    store.append_at(T0, [(key, 1.0) for key in keys])
    timeline = store._series[keys[0]].timeline
    grown = sys.getsizeof(timeline.users)
    for i in range(10, 2000):
        store.forget_pod("p%d" % i)
    for second in range(1, 60):  # rounds of the ten left, past the timeline's next trim
        store.append_at(T0 + second, [(key, float(second)) for key in keys[:10]])
    assert list(timeline.users) == [store._series[key] for key in keys[:10]]
    assert sys.getsizeof(timeline.users) < grown // 20


def test_a_full_series_keeps_its_values_in_little_more_room_than_they_take():
    # a pod's series written every second (300 values) and a container's every 10 s (12):
    # appends grow an array by 1/16 + 7 and a cut of 16 or more reallocates it; the spare
    # room stays within twice the dead-prefix slack (8, or an eighth of the values) + 2
    empty = sys.getsizeof(array("d"))
    for every, retention, slack in ((1, 300, 8), (10, 120, 2)):
        policy = RetentionPolicy(node_seconds=retention, pod_seconds=retention, container_seconds=retention,
                                 container_sample_interval=every, min_sample_interval=every)
        key = SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "p", "c")
        store = MetricStore(policy, clock=lambda: T0)
        room: list[int] = []
        for n in range(4 * retention // every):
            store.append_at(T0 + n * every, [(key, float(n))])
            if n >= 2 * retention // every:  # full since a whole window
                ring = store._series[key]
                room.append((sys.getsizeof(ring.values) - empty) // 8 - len(ring))
        assert max(room) <= 2 * slack + 2
        assert store.latest_value(key) == (T0 + (n * every), float(n))
