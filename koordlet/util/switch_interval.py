"""The interpreter's GIL switch interval, lowered while long pure-Python work runs in a
worker thread.

A thread that wants the GIL waits up to the switch interval (5 ms by default) before the
holder is made to drop it. A /metrics render is ~20 ms of Python in a worker thread at
1,000 pods; a CreateContainer arriving meanwhile needs the GIL on the event loop several
times and waited ~5 ms each. With 0.5 ms during renders, CreateContainer while /metrics was
scraped back to back went from p50 3.1 ms / p99 14.1 ms to 1.1 / 6.9 ms, the render rate
unchanged (bench/daemon_scale.py --scraped-creates). It is lowered only while such work
runs: the rest of the time the loop holds the GIL for its own short rounds, and a lower
interval would only hand it more often to the reading threads.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from types import TracebackType
from typing import Callable, TypeVar

from koordlet.config import defaults

# The interpreter keeps the interval in whole microseconds and truncates when it is set, so
# an interval set back as it was read can lose one; half a microsecond more sets it exactly.
_HALF_MICROSECOND = 0.5e-6


class LoweredSwitchInterval:
    """A context manager: while at least one thread is inside, the switch interval is
    `seconds`; the interval in force before the first one entered is restored when the
    last one leaves."""

    def __init__(self, seconds: float) -> None:
        if not seconds > 0:
            raise ValueError("a switch interval must be positive, got %r" % (seconds,))
        self._seconds = seconds
        self._lock = threading.Lock()
        self._inside = 0
        self._saved = 0.0
        self._lowered = False

    def __enter__(self) -> None:
        with self._lock:
            if self._inside == 0:
                self._saved = sys.getswitchinterval()
                self._lowered = self._seconds < self._saved
                if self._lowered:
                    sys.setswitchinterval(self._seconds)
            self._inside += 1

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        with self._lock:
            self._inside -= 1
            if self._inside == 0 and self._lowered:
                sys.setswitchinterval(self._saved + _HALF_MICROSECOND)


# The one instance of the process, for every worker that renders a large text: two
# instances nested would each restore the interval the other had set.
RENDERING = LoweredSwitchInterval(defaults.RENDER_SWITCH_INTERVAL_SECONDS)

_Result = TypeVar("_Result")


async def render_in_worker(function: Callable[..., _Result], *args: object) -> _Result:
    """function(*args) in a worker thread, the GIL handed back to the event loop within
    RENDERING's interval meanwhile. Lowered here, before the thread starts: a loop already
    waiting for the GIL when the worker lowered the interval itself waited the old 5 ms."""
    with RENDERING:
        return await asyncio.to_thread(function, *args)
