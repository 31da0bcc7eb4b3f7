"""The scheduler: order, intervals, two-phase windows, failures that do not stop others.
Timing is never asserted: each test polls to a deadline for what must happen."""

from __future__ import annotations

import asyncio
import time

from koordlet.metriccache.api import SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.framework import Scheduler
from tests.koordlet.metricsadvisor.fixtures import mark_other_turns
from tests.polling import until


class Recorder:
    gate = None

    def __init__(self, name: str, interval: float, log: list, window: float = 0.0, fail: bool = False) -> None:
        self.name, self.interval, self.window, self._log, self._fail = name, interval, window, log, fail
        self.closed = 0

    def setup(self, ctx) -> None:
        pass

    def begin(self, now: float) -> None:
        self._log.append((self.name, "begin"))

    def collect(self, now: float):
        self._log.append((self.name, "collect"))
        if self._fail:
            raise RuntimeError("boom")
        return [(SeriesKey.of(self.name), 1.0)]

    def close(self) -> None:
        self.closed += 1


async def test_due_collectors_run_in_registration_order_and_fill_the_cache():
    log: list = []
    store = MetricStore()
    scheduler = Scheduler(store)
    for name in ("node", "pods"):
        scheduler.add(Recorder(name, 0.01, log))
    scheduler.start()
    await until(lambda: len(log) >= 6)
    await scheduler.stop()
    names = [name for name, _ in log]
    assert names[:6] == ["node", "pods"] * 3
    assert scheduler.all_started() and store.latest(SeriesKey.of("pods")) is not None
    assert scheduler.stats()["node"].runs == names.count("node")


async def test_a_windowed_collector_begins_then_collects_without_blocking_others():
    log: list = []
    scheduler = Scheduler(MetricStore())
    cpi = Recorder("cpi", 3600.0, log, window=3600.0)
    scheduler.add(cpi)
    scheduler.add(Recorder("fast", 0.01, log))
    scheduler.start()
    await until(lambda: ("cpi", "begin") in log and log.count(("fast", "collect")) >= 2)  # ran while open
    assert ("cpi", "collect") not in log and not scheduler.all_started()
    await scheduler.stop()
    assert cpi.closed == 1  # stop closes the window it found open


async def test_a_window_ends_with_a_collect():
    log: list = []
    scheduler = Scheduler(MetricStore())
    scheduler.add(Recorder("cpi", 3600.0, log, window=0.01))
    scheduler.start()
    await until(scheduler.all_started)
    await scheduler.stop()
    assert log[:2] == [("cpi", "begin"), ("cpi", "collect")]


async def test_a_failing_collector_is_counted_and_others_keep_running():
    log: list = []
    scheduler = Scheduler(MetricStore())
    scheduler.add(Recorder("bad", 0.01, log, fail=True))
    scheduler.add(Recorder("good", 0.01, log))
    scheduler.start()
    await until(lambda: scheduler.stats()["bad"].errors >= 3 and scheduler.stats()["good"].runs >= 3)
    await scheduler.stop()
    stats = scheduler.stats()
    assert stats["bad"].errors == stats["bad"].runs
    assert not stats["bad"].started and stats["good"].errors == 0
    assert stats["bad"].last_error == "RuntimeError('boom')"


async def test_a_slow_run_comes_back_late_instead_of_piling_up():
    log: list = []

    class Slow(Recorder):
        def collect(self, now):
            time.sleep(0.03)  # blocks the loop for longer than the interval
            return super().collect(now)

    scheduler = Scheduler(MetricStore())
    scheduler.add(Slow("slow", 0.01, log))
    scheduler.start()
    await until(lambda: scheduler.stats()["slow"].runs >= 3)
    await scheduler.stop()
    stats = scheduler.stats()["slow"]
    assert stats.overruns == stats.runs and stats.last_wall_seconds >= 0.03


async def test_a_collector_that_always_fails_has_tried_but_not_started():
    log: list = []
    scheduler = Scheduler(MetricStore())
    scheduler.add(Recorder("bad", 0.01, log, fail=True))
    assert not scheduler.all_tried()
    scheduler.start()
    await until(scheduler.all_tried)
    await scheduler.stop()
    assert not scheduler.all_started()
    await asyncio.sleep(0)


async def test_the_loop_gets_a_turn_between_two_collectors_of_one_interval():
    log: list = []
    scheduler = Scheduler(MetricStore())
    scheduler.add(Recorder("first", 0.05, log))
    scheduler.add(Recorder("second", 0.05, log))
    task = asyncio.create_task(mark_other_turns(log))
    scheduler.start()
    try:
        await until(lambda: log.count(("second", "collect")) >= 1)
    finally:
        await scheduler.stop()
        task.cancel()
    at = log.index(("first", "collect"))
    assert log[at:at + 3] == [("first", "collect"), "other", ("second", "collect")]
