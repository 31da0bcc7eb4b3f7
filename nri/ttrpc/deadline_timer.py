"""Deadlines of many in-flight calls watched by one loop timer.

A timer per call costs a heap entry and a handle each; a ttrpc connection has
few calls in flight, so one timer armed for the earliest deadline is cheaper.
"""

from __future__ import annotations

import asyncio
from typing import Callable


class DeadlineTimer:
    """`add(key, when)` / `discard(key)`; `on_expired(key)` runs once per key whose
    deadline (loop time) has passed. `close()` stops it for good."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_expired: Callable[[int], None]) -> None:
        self._loop = loop
        self._on_expired = on_expired
        self._deadlines: dict[int, float] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._closed = False

    def add(self, key: int, when: float) -> None:
        self._deadlines[key] = when
        if not self._closed and (self._timer is None or when < self._timer_at):
            self._arm(when)

    def discard(self, key: int) -> None:
        self._deadlines.pop(key, None)

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        # Everything due by now, or by the time the timer was armed for (a loop may
        # fire a timer a little early), has expired, as its own timer would have.
        self._timer = None
        due = max(self._loop.time(), self._timer_at)
        # in deadline order, as their own timers would have fired (a blocked loop finds
        # several due at once); equal deadlines in the order they were added
        expired = sorted((key for key, when in self._deadlines.items() if when <= due), key=self._deadlines.__getitem__)
        for key in expired:
            del self._deadlines[key]
        for key in expired:
            self._on_expired(key)
        if self._deadlines and not self._closed:
            self._arm(min(self._deadlines.values()))
