"""The cyclic garbage collector and a long-lived heap.

A full (generation-2) collection walks every tracked object and holds the GIL, so the
event loop, for as long as that takes: ~100 ms on the daemon's heap at 1,000 pods
(bench/daemon_holds.py). Most of that heap is made at start-up and lives as long as the
daemon (modules, config, the informer's pods, the metric registry). Freezing it after
start-up takes it out of every later collection; objects made afterwards are still
collected as before.
"""

from __future__ import annotations

import gc


def settle_heap() -> int:
    """Collect once, then move every object left into the permanent generation (never
    walked again; freed by reference counting as before, only a cycle among them would
    stay). Call once, when start-up has built what the daemon keeps. Returns how many
    objects were frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
