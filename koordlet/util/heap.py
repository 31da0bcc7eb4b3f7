"""The cyclic garbage collector and a long-lived heap.

A full (generation-2) collection walks every tracked object and holds the GIL, so the
event loop, for as long as that takes: 105-124 ms p50, up to 218 ms, every ~6 s on the
daemon's heap at 1,000 pods (bench/daemon_holds.py). Most of that heap lives as long as
the daemon (modules, config, the informer's pods, the metric registry and cache).
Freezing what survived a full collection takes it out of every later collection; what is
made afterwards is still collected as before.

The price: a frozen object that later becomes part of unreachable cycle is never freed
(objects without cycles are still freed by reference counting, frozen or not).
"""

from __future__ import annotations

import gc
from typing import Any, Callable


def settle_heap() -> int:
    """Collect once, then move every object left into the permanent generation (never
    walked again). Call when start-up has built what the daemon keeps. Returns how many
    objects are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def keep_heap_settled() -> Callable[[], None]:
    """After every full collection, freeze what survived it: each later full collection
    walks only what was made since the one before. Returns the function that stops it."""

    def after_collection(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info["generation"] == 2:
            gc.freeze()  # right after a full collection every younger generation is empty

    gc.callbacks.append(after_collection)
    return lambda: gc.callbacks.remove(after_collection)
