"""The daemon's garbage-collector policy, applied once every module has started.

A full (generation-2) collection walks every tracked object with the GIL held, so the event
loop waits for it: ~100 ms at 1,000 pods, every ~4-6 s with the interpreter's thresholds
(bench/daemon_holds.py, bench/daemon_scale.py): the CreateContainer tail. So:

1. the start-up heap (modules, classes, the hubs and agents built) is collected once and
   frozen (util/heap.settle_heap): no later collection walks it;
2. the young threshold goes from 700 to `--gc-young-threshold` (10,000) allocations: objects that live a
   second or two (a round's readings, a report being built) mostly die young instead of
   reaching generation 2 and triggering full passes (21 -> 2 per 90 s at 1,000 pods, the
   collector's CPU 2.9 % -> 0.24 % of a core); a young pass walks up to 10,000 objects;
3. after every full collection what survived it is frozen (util/heap.keep_heap_settled):
   the next one walks only what was made since (create-window full passes 105-124 ms ->
   5-14 ms p50);
4. once every REFRESH_SECONDS the frozen heap is handed back for one full pass and frozen
   again: a frozen object that later became part of a garbage cycle is freed then (one
   ~100-250 ms pause an hour at 1,000 pods) instead of never.
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Callable

import structlog

from koordlet.config.defaults import GC_YOUNG_THRESHOLD
from koordlet.util.heap import keep_heap_settled, settle_heap

log = structlog.get_logger(__name__)

REFRESH_SECONDS = 3600.0


def apply_after_start_up(young_threshold: int = GC_YOUNG_THRESHOLD) -> Callable[[], None]:
    """Settle the start-up heap, raise the young threshold, keep later survivors frozen;
    returns what undoes it (for an in-process stop)."""
    frozen = settle_heap()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young_threshold, middle, old)
    stop_settling = keep_heap_settled()
    log.info("gc_policy_applied", frozen_objects=frozen, thresholds=list(gc.get_threshold()))

    def undo() -> None:
        stop_settling()
        gc.set_threshold(young, middle, old)
        gc.unfreeze()

    return undo


async def refresh_frozen(every: float = REFRESH_SECONDS) -> None:
    """Hand the frozen heap back to the collector for one full pass every `every` seconds."""
    while True:
        await asyncio.sleep(every)
        gc.unfreeze()
        started = time.perf_counter()
        frozen = settle_heap()
        log.info("gc_frozen_heap_refreshed", frozen_objects=frozen, pause_ms=round((time.perf_counter() - started) * 1e3, 1))
