"""The metric cache as a daemon module: opens the file in the state dir at start,
flushes queued rows every few seconds and expires old samples, all disk work in a
worker thread so the event loop never waits on sqlite."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import structlog

from koordlet.metriccache.sqlite_persistence import PersistenceError, SqlitePersistence
from koordlet.metriccache.store import DB_FILE_NAME, MetricStore
from koordlet.util.periodic import FirstRun, Periodic

log = structlog.get_logger(__name__)


class MetricCacheModule:
    """One periodic task: flush queued rows every `flush_interval`, and after a flush expire
    old samples once `gc_interval` has passed (one after the other: one sqlite connection);
    ready while it runs."""

    name = "metriccache"

    def __init__(self, store: MetricStore, state_dir: Path | None,
                 flush_interval: float = 10.0, gc_interval: float = 300.0) -> None:
        self.store = store
        self._state_dir = state_dir
        self._gc_interval = gc_interval
        self._next_gc = time.monotonic() + gc_interval
        self._loop = Periodic("metriccache-maintain", self._maintain, flush_interval,
                              first_run=FirstRun.AFTER_INTERVAL, event="metric_cache_maintenance_failed")

    async def start(self) -> None:
        if self._state_dir is not None:
            persistence = await asyncio.to_thread(open_or_set_aside, self._state_dir / DB_FILE_NAME)
            if persistence is not None:
                await asyncio.to_thread(self.store.attach, persistence)
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        await asyncio.to_thread(self.store.close)

    def ready(self) -> bool:
        return self._loop.alive()

    async def _maintain(self) -> None:
        """A full disk must not stop collection: a failed round is counted and retried."""
        await asyncio.to_thread(self.store.flush)
        if time.monotonic() < self._next_gc:
            return
        self._next_gc = time.monotonic() + self._gc_interval
        dropped = self.store.expire()
        deleted = await asyncio.to_thread(self.store.expire_on_disk)
        log.debug("metric_cache_expired", series_dropped=dropped, rows_deleted=deleted, series=len(self.store))


def open_or_set_aside(path: Path) -> SqlitePersistence | None:
    """Open the sample file; a corrupt or foreign one is renamed to *.corrupt and a new one
    started (the cache is a cache: losing it costs a cold start, not correctness)."""
    try:
        return SqlitePersistence(path)
    except PersistenceError as exc:
        aside = path.with_suffix(path.suffix + ".corrupt")
        log.error("metric_cache_file_unusable", path=str(path), error=str(exc), moved_to=str(aside))
        try:
            for suffix in ("", "-wal", "-shm"):
                source = Path(str(path) + suffix)
                if source.exists():
                    source.replace(Path(str(aside) + suffix))
            return SqlitePersistence(path)
        except (OSError, PersistenceError) as again:
            log.error("metric_cache_in_memory_only", path=str(path), error=str(again))
            return None
