"""The in-memory store and its sqlite persistence: windows, retention, bounds, restart."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.metriccache.api import Metric, NotEnoughData, Sample, SeriesKey
from koordlet.metriccache.retention import Level, RetentionPolicy
from koordlet.metriccache.sqlite_persistence import (
    EMPTY_SERIES_SWEEP_EVERY,
    PAGE_CACHE_KIB,
    PersistenceError,
    SqlitePersistence,
)
from koordlet.metriccache.store import DB_FILE_NAME, GONE_CAPACITY, GONE_SECONDS, MetricStore

NODE_CPU = SeriesKey.of(Metric.NODE_CPU_USAGE_CORES)
T0 = 1_700_000_000.0


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def samples(key: SeriesKey, start: float, values: list[float], step: float = 1.0) -> list[Sample]:
    return [Sample(key, start + i * step, v) for i, v in enumerate(values)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.floats(-1e9, 1e9)), max_size=60),
       st.integers(0, 45), st.integers(0, 3))
def test_latest_values_agree_with_latest_value(writes, oldest, expired_before):
    clock = Clock(T0 + 60)
    store = MetricStore(RetentionPolicy(node_seconds=30.0, pod_seconds=30.0), clock=clock)
    keys = [SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p%d" % i) for i in range(4)]
    asked = tuple(keys + [SeriesKey.of("never-written")])  # one tuple, asked again as strategies do

    def wanted():
        return [None if (last := store.latest_value(k)) is None or last[0] < T0 + oldest else last[1] for k in asked]

    for pod, second, value in sorted(writes, key=lambda w: w[1]):  # rounds in time order, shared or not
        store.append([Sample(keys[pod], T0 + second, value)])
        assert store.latest_values(asked, T0 + oldest) == wanted()  # series appear between two asks
    clock.now = T0 + 30 + 10 * expired_before
    store.expire()  # series emptied or dropped by retention read as None too
    assert store.latest_values(asked, T0 + oldest) == wanted()
    assert store.latest_values(list(asked), T0 + oldest) == wanted()


def test_latest_values_of_a_tuple_follow_series_forgotten_and_made_again():
    clock = Clock(T0)
    store = MetricStore(clock=clock)
    asked = (SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p1"), SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p2"))
    store.append([Sample(asked[0], T0, 1.0), Sample(asked[1], T0, 2.0)])
    assert store.latest_values(asked, T0) == [1.0, 2.0]
    store.forget_pod("p1")
    assert store.latest_values(asked, T0) == [None, 2.0]
    clock.now = T0 + GONE_SECONDS + 1
    store.append([Sample(asked[0], T0 + 1, 3.0)])
    assert store.latest_values(asked, T0) == [3.0, 2.0]


def test_a_forgotten_pod_gets_no_new_series_from_a_round_that_began_before():
    clock = Clock(T0)
    store = MetricStore(clock=clock)
    gone, kept = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "gone"), SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "kept")
    ctr = SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "gone", "c1")
    store.append([Sample(gone, T0, 1.0), Sample(kept, T0, 1.0)])
    store.forget_pod("gone")
    clock.now = T0 + 1
    store.append([Sample(gone, T0 + 1, 2.0), Sample(ctr, T0 + 1, 2.0), Sample(kept, T0 + 1, 2.0)])
    store.append_columns(T0 + 1, (gone, kept), [3.0, 3.0])
    store.append_at(T0 + 1, [(ctr, 4.0)])
    assert store.latest(gone) is None and store.latest(ctr) is None and len(store) == 1
    assert store.latest(kept).value == 3.0 and store.refused_gone == 4
    clock.now = T0 + GONE_SECONDS + 1  # long after any round in flight: the pod's own again
    store.append([Sample(gone, clock.now, 5.0)])
    assert store.latest(gone).value == 5.0


def test_a_forgotten_container_gets_no_new_series_while_its_pod_and_sibling_keep_theirs():
    clock = Clock(T0)
    store = MetricStore(clock=clock)
    pod = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p")
    gone, sibling = (SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "p", c) for c in ("c-gone", "c-kept"))
    store.append([Sample(pod, T0, 1.0), Sample(gone, T0, 1.0), Sample(sibling, T0, 1.0)])
    assert store.forget_container("p", "c-gone") == 1
    clock.now = T0 + 1  # a round begun before the removal appends after it
    store.append([Sample(pod, T0 + 1, 2.0), Sample(gone, T0 + 1, 2.0), Sample(sibling, T0 + 1, 2.0)])
    store.append_columns(T0 + 1, (gone,), [3.0])
    assert store.latest(gone) is None and store.refused_gone == 2
    assert store.latest(pod).value == 2.0 and store.latest(sibling).value == 2.0
    new_ctr = SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "p", "c-new")  # a new container of the pod
    store.append([Sample(new_ctr, T0 + 1, 4.0)])
    assert store.latest(new_ctr).value == 4.0
    clock.now = T0 + GONE_SECONDS + 1
    store.append([Sample(gone, clock.now, 5.0)])
    assert store.latest(gone).value == 5.0


def test_forgotten_pods_are_remembered_a_bounded_while():
    clock = Clock(T0)
    store = MetricStore(clock=clock)
    for i in range(GONE_CAPACITY + 10):
        store.forget_pod("p%d" % i)
    assert len(store._gone) == GONE_CAPACITY and "p0" not in store._gone
    clock.now = T0 + GONE_SECONDS + 1
    store.forget_pod("last")
    assert list(store._gone) == ["last"]


def test_window_bounds_are_inclusive_and_latest_is_newest():
    store = MetricStore()
    store.append(samples(NODE_CPU, T0, [1.0, 2.0, 3.0, 4.0, 5.0]))
    agg = store.aggregate(NODE_CPU, T0 + 1, T0 + 3, min_coverage=0)
    assert (agg.count, agg.avg, agg.first_timestamp, agg.last_timestamp) == (3, 3.0, T0 + 1, T0 + 3)
    assert store.latest(NODE_CPU) == Sample(NODE_CPU, T0 + 4, 5.0)
    assert store.latest(SeriesKey.of("nothing")) is None
    assert store.keys(Metric.NODE_CPU_USAGE_CORES) == (NODE_CPU,)
    assert store.keys("node_cpu_usage_cores") == (NODE_CPU,)


def test_unknown_series_and_cold_start_are_not_enough_data():
    store = MetricStore()
    with pytest.raises(NotEnoughData):
        store.aggregate(NODE_CPU, T0, T0 + 60)
    store.append(samples(NODE_CPU, T0, [1.0] * 10))  # 9 s of a 60 s window
    with pytest.raises(NotEnoughData):
        store.aggregate(NODE_CPU, T0, T0 + 60)
    assert store.aggregate(NODE_CPU, T0, T0 + 60, min_coverage=0).count == 10


def test_late_and_repeated_samples_keep_time_order():
    store = MetricStore()
    store.append([Sample(NODE_CPU, T0 + 2, 2.0), Sample(NODE_CPU, T0, 0.0),
                  Sample(NODE_CPU, T0 + 1, 1.0), Sample(NODE_CPU, T0 + 1, 1.5)])
    agg = store.aggregate(NODE_CPU, T0, T0 + 2)
    assert (agg.count, agg.last, agg.p50, agg.p90) == (3, 2.0, 0.0, 1.5)  # 1.5 replaced 1.0


def test_retention_per_level_and_empty_series_are_dropped():
    clock = Clock()
    policy = RetentionPolicy(node_seconds=100, pod_seconds=20, container_seconds=10)
    store = MetricStore(policy, clock=clock)
    pod = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid="u1")
    ctr = SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod_uid="u1", container_id="c1")
    for key in (NODE_CPU, pod, ctr):
        store.append(samples(key, T0, [float(i) for i in range(50)]))
    clock.now = T0 + 49
    assert store.expire() == 0
    assert store.aggregate(NODE_CPU, T0, T0 + 49, min_coverage=0).count == 50
    assert store.aggregate(pod, T0, T0 + 49, min_coverage=0).count == 21  # T0+29 .. T0+49
    assert store.aggregate(ctr, T0, T0 + 49, min_coverage=0).count == 11
    clock.now = T0 + 200
    assert store.expire() == 3 and len(store) == 0 and store.keys(Metric.NODE_CPU_USAGE_CORES) == ()


def test_capacity_bounds_samples_per_series():
    policy = RetentionPolicy(node_seconds=10, min_sample_interval=1.0)
    store = MetricStore(policy)
    store.append(samples(NODE_CPU, T0, [float(i) for i in range(1000)], step=0.01))
    assert store.sample_count() == policy.capacity(NODE_CPU) == 12  # 10 s / 1 s, +2
    ring = store._series[NODE_CPU]
    assert len(ring.timeline.ts) <= 12 + 12 // 8 + 16  # the dead prefix is cut before it grows large
    assert store.latest(NODE_CPU).value == 999.0


def test_max_series_evicts_the_stalest_series():
    store = MetricStore(RetentionPolicy(max_series=1000))
    for i in range(1500):
        key = SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod_uid="p%d" % i, container_id="c%d" % i)
        store.append([Sample(key, T0 + i, 1.0)])
    assert len(store) == 1000 and store.evicted_series == 500
    assert store.latest(SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod_uid="p0", container_id="c0")) is None
    assert store.latest(SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod_uid="p1499", container_id="c1499"))


def test_1000_containers_for_30_minutes_stay_within_the_documented_bound():
    policy = RetentionPolicy()
    store = MetricStore(policy)
    keys = [SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod_uid="p%d" % i, container_id="c%d" % i)
            for i in range(1000)]
    for second in range(0, 1800, 3):  # every 3 s for 30 minutes (keeps the test quick)
        store.append([Sample(k, T0 + second, 0.5) for k in keys])
    store.expire(T0 + 1800)
    per_series = policy.capacity(keys[0])
    assert len(store) == 1000
    assert store.sample_count() <= 1000 * per_series
    # container retention 120 s: samples at 1680, 1683 ... 1797 s remain
    assert store.sample_count() == 1000 * 40


def test_forget_pod_and_container_remove_their_series():
    store = MetricStore()
    pod = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid="u1")
    c1 = SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod_uid="u1", container_id="c1")
    c2 = SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod_uid="u1", container_id="c2")
    store.append([Sample(k, T0, 1.0) for k in (pod, c1, c2, NODE_CPU)])
    assert store.forget_container("u1", "c1") == 1
    assert set(store.keys(Metric.CONTAINER_CPU_USAGE_CORES)) == {c2}
    assert store.forget_pod("u1") == 2
    assert store.keys(Metric.POD_CPU_USAGE_CORES) == () and store.latest(NODE_CPU) is not None


def test_shared_key_is_the_stores_own_object_while_it_holds_the_series():
    store = MetricStore()
    written = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid="u1")
    store.append([Sample(written, T0, 1.0)])
    copy = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid="u1")
    assert copy == written and copy is not written
    assert store.shared_key(copy) is written
    other = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid="u2")  # no such series: the key itself
    assert store.shared_key(other) is other
    assert store.shared_key(SeriesKey.of("never-written")).metric == "never-written"
    store.forget_pod("u1")
    assert store.shared_key(copy) is copy
    assert store.keys(Metric.POD_CPU_USAGE_CORES) == ()


def test_restart_restores_persisted_levels_and_p99(tmp_path: Path):
    clock = Clock(T0 + 1799)
    store = MetricStore.open(tmp_path, clock=clock)
    node_values = [float((i * 37) % 101) for i in range(1800)]
    pod = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid="u1")
    ctr = SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, pod_uid="u1", container_id="c1")
    store.append(samples(NODE_CPU, T0, node_values))
    store.append(samples(pod, T0 + 1500, [float(i % 7) for i in range(300)]))
    store.append(samples(ctr, T0 + 1500, [3.0] * 300))
    before = store.aggregate(NODE_CPU, T0, T0 + 1799)
    pod_before = store.mean(pod, T0 + 1500, T0 + 1799)
    # every node sample; one pod sample per 10 s; containers stay in memory only
    assert store.flush() == 1800 + 30
    store.close()

    reopened = MetricStore.open(tmp_path, clock=clock)
    after = reopened.aggregate(NODE_CPU, T0, T0 + 1799)
    assert after == before and after.count == 1800
    assert after.p99 == sorted(node_values)[1782 - 1]
    pod_after = reopened.mean(pod, T0 + 1500, T0 + 1799)
    assert pod_after.count == 30 and pod_after.first_timestamp == T0 + 1500
    assert abs(pod_after.avg - pod_before.avg) < 0.5  # the 300 s average, from one point in ten
    assert reopened.latest(ctr) is None
    reopened.close()


def test_series_written_in_the_same_rounds_share_their_timestamps_again_after_a_restart(tmp_path: Path):
    """Rounds of 40 pods' series (one timestamp a round, persisted one in ten), then a
    restart: the restored series read as before, share one timeline, and the next live
    round keeps them on it; nothing restored is queued for the disk again."""
    clock = Clock(T0 + 299)
    store = MetricStore.open(tmp_path, clock=clock)
    pods = [SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid="u%02d" % i) for i in range(40)]
    for second in range(300):
        store.append_at(T0 + second, [(key, float((second + n) % 13)) for n, key in enumerate(pods)])
    before = [store.mean(key, T0, T0 + 299, min_coverage=0) for key in pods]
    store.flush()
    store.close()

    reopened = MetricStore.open(tmp_path, clock=clock)
    restored = [reopened.mean(key, T0, T0 + 299, min_coverage=0) for key in pods]
    assert [m.count for m in restored] == [30] * 40  # one sample in ten was written
    assert [m.first_timestamp for m in restored] == [m.first_timestamp for m in before]
    assert len({id(reopened._series[key].timeline) for key in pods}) == 1
    assert reopened.flush() == 0
    reopened.append_at(T0 + 295, [(key, 1.0) for key in pods])
    assert len({id(reopened._series[key].timeline) for key in pods}) == 1
    assert reopened.flush() == 0  # 5 s after the last rows on disk (T0 + 290): not due, one in ten
    reopened.close()


def test_restart_drops_samples_older_than_retention(tmp_path: Path):
    clock = Clock(T0 + 10)
    store = MetricStore.open(tmp_path, RetentionPolicy(node_seconds=60), clock=clock)
    store.append(samples(NODE_CPU, T0, [1.0] * 10))
    store.close()
    clock.now = T0 + 65
    reopened = MetricStore.open(tmp_path, RetentionPolicy(node_seconds=60), clock=clock)
    assert reopened.aggregate(NODE_CPU, T0, T0 + 65, min_coverage=0).count == 5  # T0+5 .. T0+9
    assert reopened.expire_on_disk() == 5
    reopened.close()


def test_forgotten_series_do_not_come_back_after_restart(tmp_path: Path):
    clock = Clock(T0 + 5)
    store = MetricStore.open(tmp_path, clock=clock)
    pod = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid="gone")
    store.append(samples(pod, T0, [1.0] * 3))
    store.flush()
    store.append(samples(pod, T0 + 3, [1.0] * 2))  # queued, then the pod goes
    store.forget_pod("gone")
    store.close()
    reopened = MetricStore.open(tmp_path, clock=clock)
    assert reopened.latest(pod) is None and len(reopened) == 0
    reopened.close()


def test_a_series_forgotten_and_made_again_gets_none_of_its_old_samples(tmp_path: Path):
    """The old samples wait on disk until an expiry finds them older than the shortest
    retention; the series made again has a new id, so neither a restart nor that expiry
    mixes them with its own."""
    clock = Clock(T0 + 20)
    policy = RetentionPolicy(node_seconds=60)
    store = MetricStore.open(tmp_path, policy, clock=clock)
    store.append(samples(NODE_CPU, T0, [1.0] * 5))
    store.flush()
    store._drop(NODE_CPU)  # as the series limit drops a series: its rows are forgotten on disk
    store.flush()
    store.append(samples(NODE_CPU, T0 + 10, [2.0] * 3))
    store.close()
    reopened = MetricStore.open(tmp_path, policy, clock=clock)
    again = reopened.aggregate(NODE_CPU, T0, T0 + 20, min_coverage=0)
    assert (again.count, again.avg) == (3, 2.0)
    assert reopened.expire_on_disk() == 0  # younger than 60 s
    assert reopened.expire_on_disk(T0 + 65) == 5  # the forgotten series' rows (T0..T0+4), not the new ones
    reopened.close()
    with closing(sqlite3.connect(tmp_path / DB_FILE_NAME)) as db, db:
        assert db.execute("SELECT count(*), sum(value) FROM samples").fetchone() == (3, 6.0)


def test_a_file_of_schema_1_is_brought_to_the_current_one_with_its_samples(tmp_path: Path):
    with closing(sqlite3.connect(tmp_path / DB_FILE_NAME)) as db, db:  # what koordlet-py wrote before schema 2
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema', '1')")
        db.execute("CREATE TABLE series (id INTEGER PRIMARY KEY, metric TEXT NOT NULL, pod_uid TEXT NOT NULL,"
                   " container_id TEXT NOT NULL, labels TEXT NOT NULL, retention REAL NOT NULL,"
                   " UNIQUE (metric, pod_uid, container_id, labels))")
        db.execute("CREATE TABLE samples (series_id INTEGER NOT NULL, ts REAL NOT NULL, value REAL NOT NULL,"
                   " PRIMARY KEY (series_id, ts)) WITHOUT ROWID")
        db.execute("INSERT INTO series VALUES (7, ?, '', '', '[]', 1800.0)", (NODE_CPU.metric,))
        db.executemany("INSERT INTO samples VALUES (7, ?, ?)", [(T0 + i, float(i)) for i in range(4)])
    clock = Clock(T0 + 10)
    store = MetricStore.open(tmp_path, clock=clock)
    assert store.aggregate(NODE_CPU, T0, T0 + 10, min_coverage=0).count == 4
    store.append(samples(NODE_CPU, T0 + 4, [4.0]))
    store.close()
    reopened = MetricStore.open(tmp_path, clock=clock)
    after = reopened.aggregate(NODE_CPU, T0, T0 + 10, min_coverage=0)
    assert (after.count, after.first_timestamp, after.last) == (5, T0, 4.0)
    reopened.close()
    with closing(sqlite3.connect(tmp_path / DB_FILE_NAME)) as db, db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("2",)
        assert db.execute("SELECT count(*) FROM series").fetchone() == (1,)


def test_expiry_keeps_each_retention_and_series_emptied_by_it_are_named_again(tmp_path: Path):
    clock = Clock(T0 + 10)
    policy = RetentionPolicy(node_seconds=60, pod_seconds=300, pod_persist_every_seconds=0)
    store = MetricStore.open(tmp_path, policy, clock=clock)
    node_mem = SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES)
    pod = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid="u1")
    store.append(samples(NODE_CPU, T0, [1.0] * 10))
    store.append(samples(pod, T0, [5.0] * 10))
    store.append(samples(node_mem, T0 + 50, [7.0] * 10))
    store.flush()
    # at T0 + 100: NODE_CPU's rows are past 60 s (its series goes), the pod's are not
    assert store.expire_on_disk(T0 + 100) == 10
    clock.now = T0 + 101
    store.append([Sample(NODE_CPU, T0 + 100, 3.0), Sample(node_mem, T0 + 100, 8.0)])
    store.close()
    reopened = MetricStore.open(tmp_path, policy, clock=clock)
    assert reopened.aggregate(NODE_CPU, T0, T0 + 101, min_coverage=0).count == 1  # written under a new id
    assert reopened.aggregate(node_mem, T0, T0 + 101, min_coverage=0).count == 11
    assert reopened.aggregate(pod, T0, T0 + 101, min_coverage=0).count == 10
    reopened.close()


def test_series_left_empty_go_at_the_first_expiry_and_then_once_every_sweep(tmp_path: Path):
    disk = SqlitePersistence(tmp_path / DB_FILE_NAME)
    pod = SeriesKey.of(Metric.POD_CPU_USAGE_CORES, pod_uid="u1")

    def named() -> int:
        return disk._db.execute("SELECT count(*) FROM series").fetchone()[0]

    disk.write([(NODE_CPU, 60.0, T0, 1.0), (pod, 60.0, T0, 2.0)])
    assert disk.expire(T0) == 0 and named() == 2  # the first expiry sweeps: nothing empty yet
    disk.write([(pod, 60.0, T0 + 100, 3.0)])
    assert disk.expire(T0 + 100) == 2  # NODE_CPU's row and the pod's first are past 60 s
    for _ in range(EMPTY_SERIES_SWEEP_EVERY - 2):
        disk.expire(T0 + 100)
    assert named() == 2  # NODE_CPU is empty, still named until the next sweep
    disk.expire(T0 + 100)
    assert named() == 1
    disk.write([(NODE_CPU, 60.0, T0 + 101, 4.0)])  # named again, under a new id
    assert sorted(pair for _, pairs in disk.load(T0 + 101) for pair in pairs) == sorted([(NODE_CPU, 4.0), (pod, 3.0)])
    disk.close()


def test_pending_rows_are_bounded_when_the_disk_falls_behind(tmp_path: Path):
    store = MetricStore(persistence=SqlitePersistence(tmp_path / DB_FILE_NAME), max_pending=100,
                        clock=Clock(T0 + 500))
    store.append(samples(NODE_CPU, T0, [1.0] * 250))
    assert store.dropped_pending == 150
    assert store.flush() == 100
    store.close()


def test_the_file_is_opened_with_a_bounded_page_cache(tmp_path: Path):
    persistence = SqlitePersistence(tmp_path / DB_FILE_NAME)
    try:
        assert persistence._db.execute("PRAGMA cache_size").fetchone() == (-PAGE_CACHE_KIB,)
        assert PAGE_CACHE_KIB < 2000  # below sqlite's default, which held ~2 MiB at 1,000 pods
    finally:
        persistence.close()


def test_a_corrupt_file_is_a_clear_error(tmp_path: Path):
    (tmp_path / DB_FILE_NAME).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(PersistenceError, match="metric cache file"):
        MetricStore.open(tmp_path)


def test_a_newer_schema_is_refused(tmp_path: Path):
    MetricStore.open(tmp_path).close()
    with closing(sqlite3.connect(tmp_path / DB_FILE_NAME)) as db, db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    with pytest.raises(PersistenceError, match="schema version 99"):
        MetricStore.open(tmp_path)


def test_policy_rejects_nonsense():
    with pytest.raises(ValueError):
        RetentionPolicy(node_seconds=0)
    with pytest.raises(ValueError):
        RetentionPolicy(max_series=0)
    assert RetentionPolicy(persisted=frozenset({Level.NODE})).persists(NODE_CPU)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.floats(-1e6, 1e6, allow_nan=False)), min_size=1, max_size=200),
       st.integers(0, 500), st.integers(0, 500))
def test_window_equals_a_filter_of_the_samples(points, a, b):
    start, end = T0 + min(a, b), T0 + max(a, b)
    store = MetricStore(RetentionPolicy(node_seconds=10_000))
    store.append([Sample(NODE_CPU, T0 + t, v) for t, v in points])
    latest: dict[float, float] = {}
    for t, v in points:  # one value per instant; the later append wins
        latest[T0 + t] = v
    expected = [latest[t] for t in sorted(latest) if start <= t <= end]
    if not expected:
        with pytest.raises(NotEnoughData):
            store.aggregate(NODE_CPU, start, end, min_coverage=0)
        return
    agg = store.aggregate(NODE_CPU, start, end, min_coverage=0)
    ordered = sorted(expected)
    assert agg.count == len(expected) and agg.last == expected[-1]
    assert agg.p50 == ordered[max(len(ordered) // 2, 1) - 1]
    assert agg.p50 <= agg.p90 <= agg.p95 <= agg.p99 and ordered[0] <= agg.p50 and agg.p99 <= ordered[-1]


def test_series_of_one_kind_share_how_they_are_kept_and_each_kind_keeps_its_own():
    policy = RetentionPolicy(node_seconds=60, pod_seconds=20, container_seconds=8, min_sample_interval=1.0,
                             container_sample_interval=2.0)
    store = MetricStore(policy, clock=lambda: T0)
    keys = [SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "p%d" % i) for i in range(3)] + [
        SeriesKey.of(Metric.CONTAINER_CPU_USAGE_CORES, "p0", "c0"), SeriesKey.of(Metric.NODE_CPU_USAGE_CORES)]
    for second in range(100):
        store.append_at(T0 + second, [(key, float(second)) for key in keys])
    pods = [store._series[key].keeping for key in keys[:3]]
    assert pods[0] is pods[1] is pods[2]
    container, node = store._series[keys[3]].keeping, store._series[keys[4]].keeping
    assert (pods[0].as_tuple(), container.as_tuple(), node.as_tuple()) == (
        (22, 20.0, True, 10.0), (6, 8.0, False, 0.0), (62, 60.0, True, 0.0))
    assert [store.aggregate(key, T0, T0 + 99, 0.0).count for key in keys] == [21, 21, 21, 6, 61]
