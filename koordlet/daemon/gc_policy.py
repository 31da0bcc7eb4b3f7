"""The daemon's garbage-collector policy, applied once every module has started:

1. the start-up heap (every imported module, class and function, the hubs and agents
   built) is collected once and frozen (gc.freeze): no later full collection walks it;
2. the young generation's threshold goes from 700 to YOUNG_THRESHOLD allocations.

Why: a full (generation 2) pass stops the event loop while it walks every tracked object:
~100 ms of CPU at 1,000 pods (bench.daemon_scale), the CreateContainer tail. With the
interpreter's thresholds the daemon ran one every ~4 s: objects that live a second or two
(a collection round's readings, a report being built) survive two young passes at 700
allocations each, reach generation 2, and their number triggers the next full pass. At
10,000 they mostly die young: 2 full passes in 90 s instead of 21, the collector's CPU
0.24 % of a core instead of 2.9 %. A young pass then walks up to 10,000 objects (~1 ms).
Freezing the start-up heap alone shortened a full pass by ~10 %: at 1,000 pods most of
what it walks is the pods' state.

What start-up made and later drops is still freed by reference counting; only a reference
cycle among frozen objects stays until exit (bounded: part of the start-up heap, made once).
"""

from __future__ import annotations

import gc

import structlog

log = structlog.get_logger(__name__)

YOUNG_THRESHOLD = 10_000


def apply_after_start_up() -> None:
    """Collect start-up's garbage, freeze what is left, raise the young threshold."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    log.info("gc_policy_applied", frozen_objects=gc.get_freeze_count(), thresholds=list(gc.get_threshold()))
