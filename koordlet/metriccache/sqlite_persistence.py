"""Samples on disk so percentiles over 30 minutes survive a restart of the daemon.

sqlite from the standard library, WAL journal, ``synchronous=NORMAL``: each flush is one
transaction, so a crash loses at most the last flush and never leaves half of one. Rows
are (series id, timestamp, value) in a plain rowid table with no index: a flush's rows
all go at its end, on a few pages. Keyed by (series, timestamp) (schema 1), the ~9,000
rows of a 10 s flush at 1,000 pods landed one per series range, spread over every leaf
page of the ~285,000 rows kept: each flush rewrote the whole table into the WAL, ~50 ms
of CPU against ~8 ms now (bench/metric_flush.py). The index served only start-up and
expiry, which scan instead (once at start, every 5 min). Series are named once in their
own table; their ids are never reused (AUTOINCREMENT), so the samples of a forgotten
series can wait for the next expiry to be deleted instead of costing a scan per flush.

Used from one thread at a time (the store serialises calls with a lock); the connection
is opened with check_same_thread=False because flushes run in a worker thread.
"""

from __future__ import annotations

import json
import sqlite3
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Iterable, Iterator

from koordlet.metriccache.api import SeriesKey

SCHEMA_VERSION = 2
# Series left with no sample are looked for at the first expiry and then every this many
# (every hour at the store's 5 min): the search reads every row (~50 ms of each expiry at
# 1,000 pods), and an empty series costs only its name row meanwhile.
EMPTY_SERIES_SWEEP_EVERY = 12

# sqlite's page cache, KiB (its default: 2,000). The file is written at its end and read
# whole only at start and at an expiry, which the OS's page cache serves: at 1,000 pods the
# default filled with ~2 MiB of pages read once (bench.metric_flush: VmRSS 53.6 -> 51.8 MiB,
# flush CPU the same; 64 KiB made the expiry half again as long)
PAGE_CACHE_KIB = 256

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS series ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, metric TEXT NOT NULL, pod_uid TEXT NOT NULL,"
    " container_id TEXT NOT NULL, labels TEXT NOT NULL, retention REAL NOT NULL,"
    " UNIQUE (metric, pod_uid, container_id, labels))",
    "CREATE TABLE IF NOT EXISTS samples (series_id INTEGER NOT NULL, ts REAL NOT NULL, value REAL NOT NULL)",
)

# schema 1 -> 2 in one transaction: the same series (same ids) and samples, the new tables
_FROM_SCHEMA_1 = (
    "ALTER TABLE samples RENAME TO samples_1",
    "ALTER TABLE series RENAME TO series_1",
    *_SCHEMA,
    "INSERT INTO series SELECT id, metric, pod_uid, container_id, labels, retention FROM series_1",
    "INSERT INTO samples SELECT series_id, ts, value FROM samples_1 ORDER BY ts",
    "DROP TABLE samples_1",
    "DROP TABLE series_1",
)

class PersistenceError(RuntimeError):
    """The sample file cannot be used. `corrupt`: the file itself is bad (not a database,
    malformed, a schema this version cannot read); otherwise the environment is (a full
    or read-only disk, permissions, IO): the file is kept and opening it is tried again."""

    def __init__(self, message: str, corrupt: bool) -> None:
        super().__init__(message)
        self.corrupt = corrupt


def _roll_back(db: sqlite3.Connection) -> None:
    """Undo an open transaction; sqlite may already have (a full disk at COMMIT), and a
    ROLLBACK then would only hide the first error behind "no transaction is active"."""
    if db.in_transaction:
        db.execute("ROLLBACK")


def _labels_text(key: SeriesKey) -> str:
    return json.dumps(key.labels, separators=(",", ":"))


def _key_of(metric: str, pod_uid: str, container_id: str, labels: str) -> SeriesKey:
    pairs = json.loads(labels)
    return SeriesKey(metric, pod_uid, container_id, tuple((str(k), str(v)) for k, v in pairs))


class SqlitePersistence:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA cache_size=%d" % -PAGE_CACHE_KIB)
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._check_version()
        except sqlite3.OperationalError as exc:  # cannot open, disk full, read-only, IO, locked
            raise PersistenceError("metric cache file %s: %s" % (path, exc), corrupt=False) from exc
        except sqlite3.DatabaseError as exc:  # not a database, malformed
            raise PersistenceError("metric cache file %s: %s" % (path, exc), corrupt=True) from exc
        self._ids: dict[SeriesKey, int] = {}
        self._expiries = 0

    def _check_version(self) -> None:
        """Make the tables of this version, or bring a file of schema 1 to it."""
        db = self._db
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and row[0] not in ("1", str(SCHEMA_VERSION)):
            raise PersistenceError("schema version %s, this koordlet reads %d" % (row[0], SCHEMA_VERSION),
                                   corrupt=True)
        db.execute("BEGIN")
        try:
            for statement in (_FROM_SCHEMA_1 if row is not None and row[0] == "1" else _SCHEMA):
                db.execute(statement)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            db.execute("COMMIT")
        except BaseException:
            _roll_back(db)
            raise

    def close(self) -> None:
        self._db.close()

    def _series_id(self, key: SeriesKey, retention: float) -> int:
        found = self._ids.get(key)
        if found is not None:
            return found
        labels = _labels_text(key)
        self._db.execute(
            "INSERT OR IGNORE INTO series (metric, pod_uid, container_id, labels, retention)"
            " VALUES (?, ?, ?, ?, ?)", (key.metric, key.pod_uid, key.container_id, labels, retention))
        row = self._db.execute(
            "SELECT id FROM series WHERE metric = ? AND pod_uid = ? AND container_id = ? AND labels = ?",
            (key.metric, key.pod_uid, key.container_id, labels)).fetchone()
        self._ids[key] = row[0]
        return row[0]

    def write(self, rows: Iterable[tuple[SeriesKey, float, float, float]]) -> int:
        """Store (key, retention, timestamp, value) rows in one transaction; returns the count."""
        db = self._db
        known = self._ids.get
        new = self._series_id
        db.execute("BEGIN")
        try:
            # ids start at 1: `or` only calls new() for a key not named yet
            batch = [(known(key) or new(key, retention), timestamp, value)
                     for key, retention, timestamp, value in rows]
            db.executemany("INSERT INTO samples VALUES (?, ?, ?)", batch)
            db.execute("COMMIT")
        except BaseException:
            _roll_back(db)
            self._ids.clear()  # ids created in the rolled-back transaction are gone
            raise
        return len(batch)

    def forget(self, keys: Iterable[SeriesKey]) -> None:
        """Delete the series; their samples go at the next expire (their id is not reused)."""
        db = self._db
        db.execute("BEGIN")
        try:
            for key in keys:
                self._ids.pop(key, None)
                db.execute("DELETE FROM series WHERE metric = ? AND pod_uid = ? AND container_id = ? AND labels = ?",
                           (key.metric, key.pod_uid, key.container_id, _labels_text(key)))
            db.execute("COMMIT")
        except BaseException:
            _roll_back(db)
            self._ids.clear()
            raise

    def expire(self, now: float) -> int:
        """Delete samples older than their series' retention, and those of forgotten series
        once older than the shortest retention; then series left empty. One scan per
        retention in use (two by default), each testing the timestamp first: a lookup of
        each row's series was half the cost. Empty series go at the first expiry and then
        every EMPTY_SERIES_SWEEP_EVERY."""
        db = self._db
        retentions = [row[0] for row in db.execute("SELECT DISTINCT retention FROM series ORDER BY retention")]
        shortest = retentions[0] if retentions else 0.0
        db.execute("BEGIN")
        try:
            # the shortest retention's rows are those of no series that keeps rows longer
            deleted = db.execute(
                "DELETE FROM samples WHERE ts < ? AND series_id NOT IN (SELECT id FROM series WHERE retention > ?)",
                (now - shortest, shortest)).rowcount
            for retention in retentions[1:]:
                deleted += db.execute(
                    "DELETE FROM samples WHERE ts < ? AND series_id IN (SELECT id FROM series WHERE retention = ?)",
                    (now - retention, retention)).rowcount
            empty = []
            if self._expiries % EMPTY_SERIES_SWEEP_EVERY == 0:
                empty = db.execute(
                    "SELECT id FROM series WHERE id NOT IN (SELECT DISTINCT series_id FROM samples)").fetchall()
                db.executemany("DELETE FROM series WHERE id = ?", empty)
            db.execute("COMMIT")
        except BaseException:
            _roll_back(db)
            raise
        self._expiries += 1
        if empty:  # forget only their ids: naming every series again was an 80 ms flush
            gone = {series_id for (series_id,) in empty}
            self._ids = {key: series_id for key, series_id in self._ids.items() if series_id not in gone}
        return deleted

    def load(self, now: float) -> Iterator[tuple[float, list[tuple[SeriesKey, float]]]]:
        """Every stored sample of a known series still inside its retention, round by round:
        (timestamp, [(series, value), ...]) oldest first, as the rounds were written."""
        series = {series_id: (_key_of(metric, pod_uid, container_id, labels), retention)
                  for series_id, metric, pod_uid, container_id, labels, retention in self._db.execute(
                      "SELECT id, metric, pod_uid, container_id, labels, retention FROM series")}
        ids = self._ids
        rows = self._db.execute("SELECT series_id, ts, value FROM samples ORDER BY ts, series_id")
        for ts, samples in groupby(rows, itemgetter(1)):
            round_ = []
            for series_id, _, value in samples:
                found = series.get(series_id)
                if found is None:  # forgotten, not expired yet
                    continue
                key, retention = found
                ids[key] = series_id
                if ts >= now - retention:
                    round_.append((key, value))
            if round_:
                yield ts, round_
