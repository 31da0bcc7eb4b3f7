"""The metric cache module: restore at start, flush in the background, close at stop."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.module import MetricCacheModule
from koordlet.metriccache.store import DB_FILE_NAME, MetricStore
from tests.polling import until

KEY = SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES)


def _rows_on_disk(state_dir: Path) -> int:
    with closing(sqlite3.connect(state_dir / DB_FILE_NAME)) as db, db:
        return int(db.execute("SELECT COUNT(*) FROM samples").fetchone()[0])


async def test_samples_survive_a_stop_and_start(tmp_path: Path):
    now = time.time()
    module = MetricCacheModule(MetricStore(), tmp_path, flush_interval=0.01)
    await module.start()
    assert module.ready() and module.store.persistent
    module.store.append([Sample(KEY, now - 600 + i, float(i)) for i in range(600)])
    await until(lambda: _rows_on_disk(tmp_path) > 0)  # the background flush, not the one at stop
    await module.stop()
    assert not module.ready()

    again = MetricCacheModule(MetricStore(), tmp_path)
    await again.start()
    agg = again.store.aggregate(KEY, now - 600, now)
    assert agg.count == 600 and agg.p99 == 593.0  # floor(600*0.99) = 594th of 0..599
    await again.stop()


async def test_a_corrupt_file_is_set_aside_and_a_new_one_started(tmp_path: Path):
    (tmp_path / DB_FILE_NAME).write_bytes(b"garbage" * 1000)
    module = MetricCacheModule(MetricStore(), tmp_path)
    await module.start()
    assert module.store.persistent
    (aside,) = tmp_path.glob(DB_FILE_NAME + ".corrupt-*")
    assert aside.read_bytes().startswith(b"garbage")
    await module.stop()


async def test_without_a_state_dir_the_cache_is_memory_only():
    module = MetricCacheModule(MetricStore(), None)
    await module.start()
    module.store.append([Sample(KEY, time.time(), 1.0)])
    assert not module.store.persistent and module.store.latest(KEY) is not None
    await module.stop()


async def test_a_memory_only_cache_still_drops_expired_series():
    from tests.polling import until

    module = MetricCacheModule(MetricStore(), None, flush_interval=0.01, gc_interval=0.01)
    await module.start()
    try:
        module.store.append([Sample(KEY, time.time() - 10 * module.store.policy.node_seconds, 1.0)])
        assert len(module.store) == 1
        await until(lambda: len(module.store) == 0)  # the maintenance round expired it
    finally:
        await module.stop()
