"""Work an NRI handler leaves for after its answer (the informer's feed of a new container).

The runtime waits on the answer; the follow-up can wait a little. Run with `call_soon`, it
ran right after the answer was written, on the CPU the kernel had just woken the runtime's
reader on: when the scheduler did not preempt us, the runtime read its answer only once the
follow-up was done (`bench.daemon_scale`, N = 100: a quarter of the CreateContainer round
trips ~0.3 ms longer than the empty plugin's). Here the loop sleeps first: the work runs
`delay` later, or at once when the next event comes, so events still see the informer in the
order the runtime sent them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Callable

import structlog

log = structlog.get_logger(__name__)

# uvloop's timers count whole milliseconds from the time cached at the start of the loop's
# round: 1 ms can fire in the very next poll, without the loop sleeping at all.
FOLLOW_UP_DELAY_S = 0.002


class FollowUps:
    """A queue of callbacks run in order, `delay` seconds after the first was added, or when
    `run()` is called (by the NRI plugin's `before_event`, which the stub calls before every
    handler), whichever comes first."""

    __slots__ = ("_delay", "_queue", "_timer")

    def __init__(self, delay: float = FOLLOW_UP_DELAY_S) -> None:
        self._delay = delay
        self._queue: deque[tuple[Callable[..., object], tuple[Any, ...]]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def add(self, fn: Callable[..., object], *args: Any) -> None:
        """Run fn(*args) later; at once when no loop runs (a synchronous caller)."""
        self._queue.append((fn, args))
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.run()
            return
        self._timer = loop.call_later(self._delay, self.run)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def run(self) -> None:
        """Run every queued callback now, in order; one that raises is logged and the rest
        still run (as the loop's own callbacks would)."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        queue = self._queue
        while queue:
            fn, args = queue.popleft()
            try:
                fn(*args)
            except Exception as exc:
                log.error("nri_follow_up_failed", callback=getattr(fn, "__qualname__", repr(fn)), error=repr(exc),
                          exc_info=True)
