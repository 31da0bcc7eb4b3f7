"""The metric cache as a daemon module: opens the file in the state dir at start,
flushes queued rows every few seconds and expires old samples, all disk work in a
worker thread so the event loop never waits on sqlite."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Callable

import structlog

from koordlet.metriccache.sqlite_persistence import PersistenceError, SqlitePersistence
from koordlet.metriccache.store import DB_FILE_NAME, MetricStore
from koordlet.util.durable import move_aside
from koordlet.util.periodic import FirstRun, Periodic

# Longest wait between two tries to open an unusable sample file, seconds.
REOPEN_WAIT_MAX_SECONDS = 300.0

log = structlog.get_logger(__name__)


class MetricCacheModule:
    """One periodic task: flush queued rows every `flush_interval`, and after a flush expire
    old samples once `gc_interval` has passed (one after the other: one sqlite connection).

    The file is the cache's memory across restarts, not its reason to be: a file that cannot
    be opened or written because of the environment (a full or read-only disk, permissions)
    is kept, the module says it is degraded (/readyz, koordlet_module_degraded) and opening or
    writing is tried again (opening with a doubling back-off); collection goes on in memory.
    Only a corrupt file is moved aside."""

    name = "metriccache"

    def __init__(self, store: MetricStore, state_dir: Path | None,
                 flush_interval: float = 10.0, gc_interval: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self._state_dir = state_dir
        self._gc_interval = gc_interval
        self._clock = clock
        self._next_gc = clock() + gc_interval
        self._problem: str | None = None
        self._reopen_at = 0.0
        self._reopen_wait = flush_interval
        self._loop = Periodic("metriccache-maintain", self._maintain, flush_interval,
                              first_run=FirstRun.AFTER_INTERVAL, event="metric_cache_maintenance_failed")

    async def start(self) -> None:
        await self._open()
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        await asyncio.to_thread(self.store.close)

    def ready(self) -> bool:
        return self._loop.alive()

    def degraded(self) -> str | None:
        return self._problem

    async def _open(self) -> None:
        if self._state_dir is None:
            return
        persistence, problem = await asyncio.to_thread(open_or_set_aside, self._state_dir / DB_FILE_NAME)
        if persistence is not None:
            await asyncio.to_thread(self.store.attach, persistence)
            if self._problem is not None:
                log.info("metric_cache_file_usable_again", path=str(self._state_dir / DB_FILE_NAME))
        self._problem = problem
        if problem is not None:
            self._reopen_at = self._clock() + self._reopen_wait
            self._reopen_wait = min(self._reopen_wait * 2, REOPEN_WAIT_MAX_SECONDS)

    async def _maintain(self) -> None:
        if not self.store.persistent and self._state_dir is not None and self._clock() >= self._reopen_at:
            await self._open()
        if not self.store.persistent:  # memory only (no state dir, or no usable file yet)
            if self._gc_due():
                log.debug("metric_cache_expired", series_dropped=self.store.expire(), series=len(self.store))
            return
        try:
            await asyncio.to_thread(self.store.flush)
            if self._gc_due():
                dropped = self.store.expire()
                deleted = await asyncio.to_thread(self.store.expire_on_disk)
                log.debug("metric_cache_expired", series_dropped=dropped, rows_deleted=deleted,
                          series=len(self.store))
        except sqlite3.Error as exc:  # a full disk: the rows wait in memory (bounded) for the next round
            if self._problem is None:
                log.error("metric_cache_write_failed", error=str(exc))
            self._problem = "metric cache file: %s" % exc
            return
        if self._problem is not None:
            log.info("metric_cache_write_recovered")
            self._problem = None

    def _gc_due(self) -> bool:
        """Whether expired samples are dropped this round (every gc interval)."""
        if self._clock() < self._next_gc:
            return False
        self._next_gc = self._clock() + self._gc_interval
        return True


def open_or_set_aside(path: Path) -> tuple[SqlitePersistence | None, str | None]:
    """Open the sample file: (persistence, None); a corrupt or foreign one is moved aside
    (unique name, the newest few kept) and a new one started (the cache is a cache: losing
    it costs a cold start, not correctness); (None, why) when the environment keeps it from
    being opened (kept as it is)."""
    try:
        return SqlitePersistence(path), None
    except PersistenceError as exc:
        if not exc.corrupt:
            log.error("metric_cache_file_unusable", path=str(path), error=str(exc), kept=True)
            return None, str(exc)
        try:
            aside = move_aside(path, suffixes=("", "-wal", "-shm"))
        except OSError as again:
            return None, "cannot move the corrupt %s aside: %s" % (path, again.strerror or again)
        log.error("metric_cache_file_corrupt", path=str(path), error=str(exc), moved_to=str(aside))
    try:
        return SqlitePersistence(path), None
    except PersistenceError as again:
        log.error("metric_cache_in_memory_only", path=str(path), error=str(again))
        return None, str(again)
