"""append_columns (the collectors' rounds: one keys tuple kept, a values list per round) is
append_at of the same pairs: the same samples land, new series of a round share a timeline
the same way, the same rows wait for the disk; also when series of the tuple are expired,
forgotten, evicted and made again between rounds or within one."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.series_ring import Timeline
from koordlet.metriccache.sqlite_persistence import SqlitePersistence
from koordlet.metriccache.store import DB_FILE_NAME, MetricStore

T0 = 1_700_000_000.0
KEYS = tuple([SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p%d" % i) for i in range(3)]
             + [SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "p%d" % (i % 2), "c%d" % i) for i in range(3)]
             + [SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p0")])  # one key twice: the later value wins

# ("round", seconds since the last, value or None per key, where the round is cut in two)
round_step = st.tuples(st.just("round"), st.sampled_from([0, 1, 1, 1, 2, 9, 30]),
                       st.lists(st.one_of(st.none(), st.integers(-9, 9)), min_size=len(KEYS), max_size=len(KEYS)),
                       st.integers(0, len(KEYS)))
expire_step = st.tuples(st.just("expire"), st.integers(0, 40))
forget_step = st.tuples(st.just("forget"), st.integers(0, 2))
steps = st.lists(st.one_of(round_step, round_step, round_step, expire_step, forget_step), max_size=60)


def state(store: MetricStore) -> tuple[object, ...]:
    """Every series' samples, which series share a timeline, the rows waiting for the disk."""
    timelines: dict[int, int] = {}

    def which(timeline: Timeline) -> int:
        return timelines.setdefault(id(timeline), len(timelines))

    series = {key: (list(zip(*ring.window(float("-inf"), float("inf")))), which(ring.timeline))
              for key, ring in sorted(store._series.items())}
    return series, list(store._pending), list(store._forgotten), store.evicted_series


@settings(max_examples=150, deadline=None)
@given(steps, st.integers(4, 8))
def test_append_columns_is_append_at_of_the_pairs(steps, max_series):
    policy = RetentionPolicy(node_seconds=60, pod_seconds=20, container_seconds=8, max_series=max_series)
    with tempfile.TemporaryDirectory() as tmp:
        clock = [T0]
        pairs_store = MetricStore(policy, SqlitePersistence(Path(tmp) / ("a-" + DB_FILE_NAME)), lambda: clock[0])
        columns_store = MetricStore(policy, SqlitePersistence(Path(tmp) / ("b-" + DB_FILE_NAME)), lambda: clock[0])
        now = T0
        for step in steps:
            if step[0] == "round":
                _, gap, values, cut = step
                now += gap
                floats = [None if v is None else float(v) for v in values]
                for start, stop in ((0, cut), (cut, len(KEYS))):  # the scheduler's slices
                    pairs_store.append_at(now, [(k, v) for k, v in zip(KEYS[start:stop], floats[start:stop])
                                                if v is not None])
                    columns_store.append_columns(now, KEYS, floats, start, stop)
            elif step[0] == "expire":
                clock[0] = now + step[1]
                assert pairs_store.expire() == columns_store.expire()
            else:
                assert pairs_store.forget_pod("p%d" % step[1]) == columns_store.forget_pod("p%d" % step[1])
            assert state(columns_store) == state(pairs_store)
        pairs_store.close()
        columns_store.close()


def test_a_round_of_new_series_shares_one_timeline_and_queues_its_persisted_rows(tmp_path: Path):
    store = MetricStore(persistence=SqlitePersistence(tmp_path / DB_FILE_NAME))
    keys = tuple(SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, "p%d" % i) for i in range(5))
    store.append_columns(T0, keys, [1.0, None, 3.0, 4.0, 5.0])
    store.append_columns(T0 + 1, keys, [1.5, 2.5, 3.5, None, 5.5])
    assert store.latest_value(keys[1]) == (T0 + 1, 2.5)
    assert store.latest_value(keys[3]) == (T0, 4.0)
    assert len({id(store._series[key].timeline) for key in (keys[0], keys[2], keys[4])}) == 1
    # pods are written every 10 s: the first round's samples only, the second's later
    assert sorted((row[0].pod_uid, row[2]) for row in store._pending) == [
        ("p0", T0), ("p1", T0 + 1), ("p2", T0), ("p3", T0), ("p4", T0)]
    store.close()


class _CountedSeries(dict):  # type: ignore[type-arg]
    """The store's series map, counting the lookups made through get."""

    looked_up = 0

    def get(self, key, default=None):  # type: ignore[no-untyped-def]
        _CountedSeries.looked_up += 1
        return super().get(key, default)


def test_a_round_appended_in_slices_looks_up_each_slice_only_and_then_nothing():
    store = MetricStore(RetentionPolicy())
    keys = tuple(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p%d" % i) for i in range(12))
    store.append_columns(T0, keys, [1.0] * len(keys))  # the series exist from here on
    store._series = _CountedSeries(store._series)
    store._ring_lists.clear()
    for round_ in (1, 2):
        seen = []
        for start in range(0, len(keys), 4):
            _CountedSeries.looked_up = 0
            store.append_columns(T0 + round_, keys, [float(round_)] * len(keys), start, start + 4)
            seen.append(_CountedSeries.looked_up)
        assert seen == ([4, 4, 4] if round_ == 1 else [0, 0, 0])
    assert [store.latest_value(key) for key in keys] == [(T0 + 2, 2.0)] * len(keys)


def test_lookups_made_before_a_series_came_are_not_kept_past_the_next_lookup():
    """A kept lookup is only used while no series comes or goes: those of an older
    generation are dropped at the next lookup made, with the key tuples they hold."""
    store = MetricStore(RetentionPolicy())
    pods = tuple(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p%d" % i) for i in range(4))
    store.append_columns(T0, pods, [1.0] * len(pods))
    first, second = pods[:2], pods[2:]
    store.latest_values(first, T0)
    store.latest_values(second, T0)
    assert len(store._ring_lists) == 2  # the same generation: both kept
    store.append_columns(T0 + 1, (SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "new"),), [1.0])  # a series came
    assert store.latest_values(first, T0) == [1.0, 1.0]
    assert list(store._ring_lists.values()) == [(first, store._generation, store._rings_of(first))]


def test_series_in_step_with_other_keepings_drop_by_their_own():
    """Pod and container series made in one round stay on one timeline with the same first
    value and count; past the container retention only theirs drop (append_columns counts
    a drop once for series in the same place: the keeping is part of the place)."""
    policy = RetentionPolicy(pod_seconds=20, container_seconds=8)
    keys = KEYS[:-1]  # pods first, then containers
    pairs_store, columns_store = MetricStore(policy), MetricStore(policy)
    for second in range(30):
        values = [float(second + i) for i in range(len(keys))]
        pairs_store.append_at(T0 + second, list(zip(keys, values)))
        columns_store.append_columns(T0 + second, keys, values)
        assert state(columns_store) == state(pairs_store), second
    assert len(columns_store._series[keys[0]]) > len(columns_store._series[keys[-1]])
