"""CPU of the metric cache's flush to sqlite at N pods, in steady state.

    python -m bench.metric_flush [--pods 1000] [--minutes 15]

The store gets the series and cadence of the daemon's default collectors
(bench/metric_cache_memory.py: node 1 s, pod usage 1 s, throttling 10 s, the node's PSI avg10 10 s),
with a file in a temporary dir; every 10 simulated s a flush (the module's interval) and
every 300 s an expiry in memory and on disk (its gc interval). The flushes of the last
third (the pods' 300 s retention long full on disk) are measured: thread CPU per flush and
per row. Floor, in the same run: the very rows of each flush, as (series id, timestamp,
value) tuples made beforehand, inserted by a bare executemany in one transaction into an
identical table (the module's own samples DDL and pragmas) that got the same rows and the
same expiries before; and the ratio. Also: the CPU of each expiry on disk, and flushes
and expiries together per second; the longest a thread sleeping 0.5 ms at a time
(the event loop's stand-in) overslept during the measured flushes (the GIL held by the
flush, at most the 5 ms switch interval per turn), and the CPU of opening the file again
(the restore at daemon start) with the rows the run left.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterable

from bench.metric_cache_memory import GC_INTERVAL, collectors, value_for
from koordlet.metriccache import sqlite_persistence
from koordlet.metriccache.api import SeriesKey
from koordlet.metriccache.retention import RetentionPolicy
from koordlet.metriccache.sqlite_persistence import SqlitePersistence
from koordlet.metriccache.store import DB_FILE_NAME, MetricStore

FLUSH_EVERY = 10
BASE = 1.78e9


class Sleeper:
    """A thread that sleeps 0.5 ms at a time and keeps its longest oversleep while armed."""

    def __init__(self) -> None:
        self.armed = False
        self.longest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            start = time.perf_counter()
            time.sleep(0.0005)
            late = time.perf_counter() - start - 0.0005
            if self.armed and late > self.longest:
                self.longest = late

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class Floor:
    """A bare connection on a table made by the module's own samples DDL."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(str(path), isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(next(s for s in sqlite_persistence._SCHEMA if "samples" in s))
        self.db.execute("CREATE TABLE retention (id INTEGER PRIMARY KEY, seconds REAL NOT NULL)")

    def write(self, batch: list[tuple[int, float, float]], retention: dict[int, float]) -> float:
        self.db.executemany("INSERT OR IGNORE INTO retention VALUES (?, ?)", retention.items())
        cpu = time.thread_time()
        self.db.execute("BEGIN")
        self.db.executemany("INSERT INTO samples VALUES (?, ?, ?)", batch)
        self.db.execute("COMMIT")
        return time.thread_time() - cpu

    def expire(self, now: float) -> None:
        self.db.execute("DELETE FROM samples WHERE ts < ? - (SELECT seconds FROM retention WHERE id = series_id)",
                        (now,))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--minutes", type=int, default=15)
    args = parser.parse_args()
    seconds = args.minutes * 60
    rng = random.Random(18)
    node, per_pod = collectors(args.pods)
    policy = RetentionPolicy()
    with tempfile.TemporaryDirectory(prefix="koordlet-bench-flush-") as tmp:
        persistence = SqlitePersistence(Path(tmp) / DB_FILE_NAME)
        store = MetricStore(policy, persistence, clock=lambda: BASE)
        floor = Floor(Path(tmp) / "floor.sqlite")
        written: list[list[tuple[SeriesKey, float, float, float]]] = []
        real_write = persistence.write

        def keep_rows(rows: Iterable[tuple[SeriesKey, float, float, float]]) -> int:
            assert isinstance(rows, list)
            written.append(rows)  # the flush's own list: no copy inside the timed span
            return real_write(rows)

        persistence.write = keep_rows  # type: ignore[method-assign]
        costs: list[tuple[float, int]] = []
        floors: list[float] = []
        expiries: list[float] = []
        sleeper = Sleeper()
        for second in range(1, seconds + 1):
            for collector in (node, *per_pod):
                if second % collector.every == 0:
                    now = BASE + second + collector.offset
                    store.append_at(now, [(key, value_for(key, rng)) for key in collector.keys_at(second)])
            if second % FLUSH_EVERY:
                continue
            measured = second > seconds * 2 // 3
            sleeper.armed = measured
            cpu = time.thread_time()
            count = store.flush()
            cost = time.thread_time() - cpu
            sleeper.armed = False
            flushed = written.pop()
            ids = persistence._ids
            retention = {ids[key]: seconds_kept for key, seconds_kept, _, _ in flushed}
            floor_cost = floor.write([(ids[key], ts, value) for key, _, ts, value in flushed], retention)
            if measured:
                costs.append((cost, count))
                floors.append(floor_cost)
            if second % GC_INTERVAL == 0:
                store.expire(BASE + second)
                cpu = time.thread_time()
                store.expire_on_disk(BASE + second)
                expiries.append(time.thread_time() - cpu)
                floor.expire(BASE + second)
        sleeper.stop()
        store.close()
        floor.db.close()
        cpu = time.thread_time()
        reopened = MetricStore.open(Path(tmp), policy, clock=lambda: BASE + seconds)
        restore_ms = (time.thread_time() - cpu) * 1e3
        restored = reopened.sample_count()
        reopened.close()
    ms = statistics.median(c for c, _ in costs) * 1e3
    worst = max(c for c, _ in costs) * 1e3
    rows = statistics.median(n for _, n in costs)
    floor_ms = statistics.median(floors) * 1e3
    print("metric_flush: %d pods, %d simulated min, %d flushes measured (last third), %d rows a flush = %.0f rows/s"
          % (args.pods, args.minutes, len(costs), rows, rows / FLUSH_EVERY))
    print("flush cpu p50 %.2f ms (max %.2f) = %.2f us/row = %.2f ms/s | floor bare executemany %.2f ms = %.2f us/row "
          "| ratio %.2fx" % (ms, worst, ms * 1e3 / rows, ms / FLUSH_EVERY, floor_ms, floor_ms * 1e3 / rows,
                             ms / floor_ms))
    print("expiry on disk every %d s: cpu %s ms | flushes and expiries together %.2f ms of CPU a second"
          % (GC_INTERVAL, " ".join("%.0f" % (e * 1e3) for e in expiries),
             ms / FLUSH_EVERY + statistics.median(expiries[1:] or expiries) * 1e3 / GC_INTERVAL))
    print("longest oversleep of a 0.5 ms sleeper during the measured flushes %.2f ms | restore at start: %d samples "
          "in %.0f ms of CPU" % (sleeper.longest * 1e3, restored, restore_ms))


if __name__ == "__main__":
    main()
