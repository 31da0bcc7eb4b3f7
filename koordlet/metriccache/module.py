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

log = structlog.get_logger(__name__)


class MetricCacheModule:
    name = "metriccache"

    def __init__(self, store: MetricStore, state_dir: Path | None,
                 flush_interval: float = 10.0, gc_interval: float = 300.0) -> None:
        self.store = store
        self._state_dir = state_dir
        self._flush_interval = flush_interval
        self._gc_interval = gc_interval
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        if self._state_dir is not None:
            persistence = await asyncio.to_thread(open_or_set_aside, self._state_dir / DB_FILE_NAME)
            if persistence is not None:
                await asyncio.to_thread(self.store.attach, persistence)
        self._task = asyncio.create_task(self._maintain(), name="metriccache-maintain")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await asyncio.to_thread(self.store.close)

    def ready(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _maintain(self) -> None:
        next_gc = time.monotonic() + self._gc_interval
        while True:
            await asyncio.sleep(self._flush_interval)
            try:
                await asyncio.to_thread(self.store.flush)
                if time.monotonic() >= next_gc:
                    next_gc = time.monotonic() + self._gc_interval
                    dropped = self.store.expire()
                    deleted = await asyncio.to_thread(self.store.expire_on_disk)
                    log.debug("metric_cache_expired", series_dropped=dropped, rows_deleted=deleted,
                              series=len(self.store))
            except Exception as exc:  # a full disk must not stop collection
                log.error("metric_cache_maintenance_failed", error=repr(exc))


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
