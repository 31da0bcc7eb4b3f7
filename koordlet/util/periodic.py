"""One runner for every periodic task of the daemon.

`Periodic(name, round, interval)` runs `round` (sync or async) on the event loop, again
`interval` seconds after the previous round ended: a round that overruns never piles up,
the next one simply starts later. The rules every loop of the daemon follows:

- first run: at once when the task starts (`FirstRun.NOW`), or one interval later
  (`FirstRun.AFTER_INTERVAL`);
- interval: a number, or a callable asked after every round (an interval the cluster may
  change); a round may also return the seconds to wait before the next one (a retry
  sooner than the interval), None for the interval;
- errors: a round that raises is counted (`failures`, and `koordlet_periodic_errors_total
  {task}` when a registry is given), logged once per distinct error with the task's event
  name (`<name>_failed` unless told), and the next round runs as usual;
- liveness: `alive()` is False once the task has ended (it only ends by an error the
  runner does not catch, or a stop) or while a round has run far longer than its interval
  (a hung round); a module's `ready()` reads it, so a dead loop makes /readyz say so;
- wake: `wake()` cuts the current pause short (the runtime hooks' reconcile pass runs at
  once on a pod change, its full pass still every interval);
- stop: cancels the task and waits for it, without a traceback.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import weakref
from enum import Enum
from typing import Awaitable, Callable, Union

import structlog

from koordlet.metrics.client import CollectorRegistry, Counter

log = structlog.get_logger(__name__)

Round = Callable[[], Union[Awaitable[Union[float, None]], float, None]]
Interval = Union[float, Callable[[], float]]

# A round counts as hung once it has run this many intervals (and at least the floor).
HUNG_AFTER_INTERVALS = 10.0
HUNG_AFTER_FLOOR_SECONDS = 60.0


class FirstRun(Enum):
    NOW = "now"
    AFTER_INTERVAL = "after_interval"


class Periodic:
    def __init__(self, name: str, round: Round, interval: Interval, *,
                 first_run: FirstRun = FirstRun.NOW, event: str | None = None,
                 registry: CollectorRegistry | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self._round = round
        self._interval = interval
        self._first_run = first_run
        self._event = event or f"{name}_failed"
        self._clock = clock
        self._errors = _error_counter(registry).labels(task=name) if registry is not None else None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._round_started: float | None = None
        self.rounds = 0
        self.failures = 0
        self.last_error: str | None = None

    def interval(self) -> float:
        return self._interval() if callable(self._interval) else self._interval

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    def wake(self) -> None:
        """Run the next round soon, not after the rest of the interval (a change to act on)."""
        self._wake.set()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def alive(self) -> bool:
        """The task runs and no round has been stuck for far longer than its interval."""
        if not self.running:
            return False
        started = self._round_started
        if started is None:
            return True
        hung_after = max(HUNG_AFTER_FLOOR_SECONDS, HUNG_AFTER_INTERVALS * self.interval())
        return self._clock() - started < hung_after

    async def run_once(self) -> float | None:
        """One round under the error rule; the delay it asked for, if any."""
        self._round_started = self._clock()
        try:
            result = self._round()
            if inspect.isawaitable(result):
                result = await result
            if result is not None and (isinstance(result, bool) or not isinstance(result, (int, float))):
                # a round that returns its outcome instead of a delay would run back to back
                raise TypeError("round %s returned %r, not a delay in seconds or None" % (self.name, result))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the rule: count, log once per kind, carry on
            self._failed(exc)
            return None
        finally:
            self._round_started = None
            self.rounds += 1
        return result

    async def _run(self) -> None:
        if self._first_run is FirstRun.AFTER_INTERVAL:
            await self._pause(self.interval())
        while True:
            asked = await self.run_once()
            await self._pause(self.interval() if asked is None else asked)
            if asyncio.current_task() is not self._task:
                return  # stopped: a cancel that met a wake inside wait_for can be lost (3.11)

    async def _pause(self, seconds: float) -> None:
        """Sleep `seconds`, or less when woken."""
        if not self._wake.is_set():
            try:
                await asyncio.wait_for(self._wake.wait(), max(seconds, 0.0))
            except TimeoutError:
                pass
        self._wake.clear()

    def _failed(self, exc: Exception) -> None:
        self.failures += 1
        if self._errors is not None:
            self._errors.inc()
        text = repr(exc)
        if text != self.last_error:
            log.error(self._event, task=self.name, error=text, exc_info=exc)
        self.last_error = text


# one counter family per registry, shared by every task registered on it
_COUNTERS: weakref.WeakKeyDictionary[CollectorRegistry, Counter] = weakref.WeakKeyDictionary()


def _error_counter(registry: CollectorRegistry) -> Counter:
    """koordlet_periodic_errors_total{task} on the daemon's registry."""
    found = _COUNTERS.get(registry)
    if found is None:
        found = _COUNTERS[registry] = Counter(
            "koordlet_periodic_errors_total", "Rounds of a periodic task that raised.", ["task"], registry=registry)
    return found
