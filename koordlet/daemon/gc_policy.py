"""The daemon's garbage-collector policy, applied once every module has started.

A full (generation-2) collection walks every tracked object with the GIL held, so the event
loop waits for it: ~100 ms at 1,000 pods, every ~4-6 s with the interpreter's thresholds
(bench/daemon_holds.py, bench/daemon_scale.py): the CreateContainer tail. So:

1. the start-up heap (modules, classes, the hubs and agents built) is collected once and
   frozen (util/heap.settle_heap): no later collection walks it;
2. the young threshold is `--gc-young-threshold` allocations (700, the interpreter's own).
   Before (3), objects that live a second or two (a round's readings, a report being built)
   reached generation 2 and triggered full passes, so the threshold was raised (10,000 cut
   those from 21 to 2 per 90 s at 1,000 pods, later 2,000). Since survivors are frozen (3),
   no pass but a young one is left, and a young pass walks what was made since the last
   one, with everything those objects point to: its pause grows faster than the threshold.
   At 1,000 pods in the create window (bench/daemon_holds.py, two alternated pairs), 2,000
   gave 16-19 young passes, p50 4.5-5.1 ms, max 13-16 ms; 700 gave 95-97 passes, p50
   0.7-0.8 ms, max 2.9-3.2 ms, for the same collector CPU (72-93 against 81-101 ms in 30 s);
3. after every collection, of any generation, what survived it is frozen: no object is
   walked by more than one pass once it has survived, so a middle or full pass walks only
   what was made since the pass before, like a young one. The collector frees almost
   nothing here (~1,100 objects in 3 minutes at 1,000 pods): the middle passes (8-25 ms)
   and full ones (~25 ms) walked young survivors that were alive anyway. Objects without
   cycles are freed by reference counting, frozen or not; a frozen cycle waits for 4.
   (Freezing after full passes only: create-window full passes 105-124 ms -> 5-14 ms p50;
   after every pass: see freeze_after_pass.)
4. once every REFRESH_SECONDS the frozen heap is handed back for one full pass and frozen
   again: a frozen object that later became part of a garbage cycle is freed then (one
   ~100-250 ms pause an hour at 1,000 pods) instead of never.
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any, Callable

import structlog

from koordlet.config.defaults import GC_YOUNG_THRESHOLD
from koordlet.util.heap import settle_heap

log = structlog.get_logger(__name__)

REFRESH_SECONDS = 3600.0
# What survives a pass of this generation or an older one is frozen (0: every pass).
FREEZE_FROM_GENERATION = 0


def freeze_after_pass(phase: str, generation: int, freeze_from: int = FREEZE_FROM_GENERATION) -> bool:
    """Whether to freeze once this collector callback returns: at the end of a pass of
    `freeze_from` or an older generation (every younger generation is empty then)."""
    return phase == "stop" and generation >= freeze_from


def keep_survivors_frozen(freeze_from: int) -> Callable[[], None]:
    """Freeze what survives each pass `freeze_after_pass` names; returns what stops it."""

    def after_collection(phase: str, info: dict[str, Any]) -> None:
        if freeze_after_pass(phase, info["generation"], freeze_from):
            gc.freeze()

    gc.callbacks.append(after_collection)
    return lambda: gc.callbacks.remove(after_collection)


def apply_after_start_up(young_threshold: int = GC_YOUNG_THRESHOLD) -> Callable[[], None]:
    """Settle the start-up heap, raise the young threshold, keep later survivors frozen;
    returns what undoes it (for an in-process stop)."""
    frozen = settle_heap()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young_threshold, middle, old)
    stop_settling = keep_survivors_frozen(FREEZE_FROM_GENERATION)
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
