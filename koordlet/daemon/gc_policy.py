"""The daemon's garbage-collector policy: once every module has started, the start-up heap
(every imported module, class and function, the hubs and agents built) is collected once
and frozen (gc.freeze), so no later full collection scans it again.

Why: a full (generation 2) pass stops the event loop for as long as it walks every tracked
object. Over a heap like the daemon's at 1,000 pods (bench.gc_holds) a pass took ~30 ms of
CPU, ~4 ms with the start-up heap frozen: most of the walk was start-up objects that live as
long as the process. What start-up made and later drops is still freed by reference
counting; only a reference cycle among frozen objects stays until exit (bounded: it is part
of the start-up heap, made once).
"""

from __future__ import annotations

import gc

import structlog

log = structlog.get_logger(__name__)


def freeze_start_up_heap() -> None:
    """Collect start-up's garbage, then move every object still tracked out of the
    collector's reach (gc.freeze)."""
    gc.collect()
    gc.freeze()
    log.info("gc_start_up_heap_frozen", objects=gc.get_freeze_count())
