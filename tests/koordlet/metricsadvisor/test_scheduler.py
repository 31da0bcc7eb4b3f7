"""The scheduler: order, intervals, two-phase windows, failures that do not stop others."""

from __future__ import annotations

import asyncio

from koordlet.metriccache.api import SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.framework import Scheduler


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
        scheduler.add(Recorder(name, 0.05, log))
    scheduler.start()
    await asyncio.sleep(0.17)
    await scheduler.stop()
    names = [name for name, _ in log]
    assert names[:4] == ["node", "pods", "node", "pods"]
    assert 2 <= names.count("node") <= 5
    assert scheduler.all_started() and store.latest(SeriesKey.of("pods")) is not None
    assert scheduler.stats()["node"].runs == names.count("node")


async def test_a_windowed_collector_begins_then_collects_without_blocking_others():
    log: list = []
    scheduler = Scheduler(MetricStore())
    cpi = Recorder("cpi", 10.0, log, window=0.1)
    scheduler.add(cpi)
    scheduler.add(Recorder("fast", 0.02, log))
    scheduler.start()
    await asyncio.sleep(0.05)
    assert ("cpi", "begin") in log and ("cpi", "collect") not in log
    assert log.count(("fast", "collect")) >= 2  # ran while the window was open
    assert not scheduler.all_started()
    await asyncio.sleep(0.1)
    assert ("cpi", "collect") in log and scheduler.all_started()
    await scheduler.stop()


async def test_stop_closes_an_open_window():
    log: list = []
    scheduler = Scheduler(MetricStore())
    cpi = Recorder("cpi", 10.0, log, window=5.0)
    scheduler.add(cpi)
    scheduler.start()
    await asyncio.sleep(0.01)
    await scheduler.stop()
    assert cpi.closed == 1 and ("cpi", "collect") not in log


async def test_a_failing_collector_is_counted_and_others_keep_running():
    log: list = []
    scheduler = Scheduler(MetricStore())
    scheduler.add(Recorder("bad", 0.02, log, fail=True))
    scheduler.add(Recorder("good", 0.02, log))
    scheduler.start()
    await asyncio.sleep(0.09)
    await scheduler.stop()
    stats = scheduler.stats()
    assert stats["bad"].errors >= 3 and stats["bad"].errors == stats["bad"].runs
    assert not stats["bad"].started and stats["good"].runs >= 3 and stats["good"].errors == 0
    assert stats["bad"].last_error == "RuntimeError('boom')"


async def test_a_slow_run_skips_ticks_instead_of_piling_up():
    log: list = []

    class Slow(Recorder):
        def collect(self, now):
            import time
            time.sleep(0.05)  # blocks the loop for 2.5 intervals
            return super().collect(now)

    scheduler = Scheduler(MetricStore())
    scheduler.add(Slow("slow", 0.02, log))
    scheduler.start()
    await asyncio.sleep(0.2)
    await scheduler.stop()
    stats = scheduler.stats()["slow"]
    # each run takes 0.05 s and is followed by a full 0.02 s interval: at most 4 runs in 0.2 s
    assert stats.overruns >= 1 and stats.runs <= 4
    assert stats.last_wall_seconds >= 0.05


async def test_a_collector_that_always_fails_has_tried_but_not_started():
    log: list = []
    scheduler = Scheduler(MetricStore())
    scheduler.add(Recorder("bad", 0.02, log, fail=True))
    assert not scheduler.all_tried()
    scheduler.start()
    await asyncio.sleep(0.05)
    await scheduler.stop()
    assert scheduler.all_tried() and not scheduler.all_started()
