"""The one periodic runner: first-run rule, error rule, liveness, stop, no pile-up."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from koordlet.util.periodic import FirstRun, Periodic
from tests.polling import until


async def test_runs_at_once_then_every_interval_and_stops_cleanly() -> None:
    calls: list[float] = []
    task = Periodic("probe", lambda: calls.append(asyncio.get_running_loop().time()), 0.01)
    task.start()
    await until(lambda: len(calls) >= 3)
    assert task.alive() and task.rounds >= 3
    await task.stop()
    assert not task.alive() and not task.running
    seen = len(calls)
    await asyncio.sleep(0.05)
    assert len(calls) == seen  # stopped means stopped


async def test_a_stop_right_after_a_wake_ends_the_task() -> None:
    """A wake and a stop in the same turn of the loop: the cancel can meet the wake inside
    the pause's wait_for and be lost (Python 3.11); the task ends anyway and stop returns."""
    calls: list[int] = []
    task = Periodic("woken", lambda: calls.append(1), 3600.0)
    task.start()
    await until(lambda: calls)
    await asyncio.sleep(0)  # into the pause
    task.wake()
    await asyncio.sleep(0)  # the event's waiter is woken: the pause's wait_for is about to return
    stopping = asyncio.ensure_future(task.stop())
    await until(stopping.done, timeout=10)
    assert not task.running and len(calls) <= 2


async def test_first_run_after_an_interval_waits_for_it() -> None:
    calls: list[int] = []
    task = Periodic("late", lambda: calls.append(1), 3600.0, first_run=FirstRun.AFTER_INTERVAL)
    task.start()
    await asyncio.sleep(0.05)
    assert calls == [] and task.alive()
    await task.stop()


async def test_an_error_is_counted_logged_once_per_kind_and_the_loop_goes_on() -> None:
    registry = CollectorRegistry()
    outcomes = iter([ValueError("bad"), ValueError("bad"), KeyError("other"), None, None])
    rounds: list[int] = []

    def round() -> None:
        rounds.append(1)
        outcome = next(outcomes, None)
        if outcome is not None:
            raise outcome

    task = Periodic("flaky", round, 0.001, registry=registry, event="flaky_round_failed")
    with capture_logs() as logs:
        task.start()
        await until(lambda: len(rounds) >= 5)
        await task.stop()
    failed = [entry for entry in logs if entry["event"] == "flaky_round_failed"]
    assert [entry["error"] for entry in failed] == ["ValueError('bad')", "KeyError('other')"]
    assert task.failures == 3
    assert registry.get_sample_value("koordlet_periodic_errors_total", {"task": "flaky"}) == 3


async def test_a_round_may_ask_for_its_next_delay() -> None:
    rounds: list[int] = []

    async def round() -> float | None:
        rounds.append(1)
        return 0.001 if len(rounds) < 3 else None  # a quick retry, then the (long) interval

    task = Periodic("retry", round, 3600.0)
    task.start()
    await until(lambda: len(rounds) == 3)
    await asyncio.sleep(0.02)
    assert len(rounds) == 3
    await task.stop()


async def test_a_task_that_dies_is_not_alive() -> None:
    class Fatal(BaseException):
        pass

    def round() -> None:
        raise Fatal()

    task = Periodic("dies", round, 0.01)
    task.start()
    await until(lambda: not task.running)
    assert not task.alive()
    await task.stop()  # the ended task's exception is collected, not left unretrieved


async def test_a_round_hung_for_many_intervals_makes_the_task_not_alive() -> None:
    now = [0.0]
    release = asyncio.Event()

    async def round() -> None:
        await release.wait()

    task = Periodic("hangs", round, 1.0, clock=lambda: now[0])
    task.start()
    await until(lambda: task._round_started is not None)
    now[0] = 59.0
    assert task.alive()  # at most the floor of 60 s for a 1 s task
    now[0] = 61.0
    assert not task.alive()
    release.set()
    await until(lambda: task.rounds == 1)
    assert task.alive()
    await task.stop()


async def test_overrunning_rounds_do_not_pile_up() -> None:
    running = 0
    most = 0

    async def round() -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.02)  # longer than the interval
        running -= 1

    task = Periodic("slow", round, 0.001)
    task.start()
    await until(lambda: task.rounds >= 3)
    await task.stop()
    assert most == 1


@pytest.mark.parametrize("interval", [0.01, lambda: 0.01])
async def test_the_interval_may_be_a_callable(interval) -> None:
    task = Periodic("either", lambda: None, interval)
    assert task.interval() == 0.01


@pytest.mark.parametrize("outcome", [False, True, "done"])
async def test_a_round_that_returns_an_outcome_is_an_error_not_a_zero_delay(outcome) -> None:
    """False would otherwise be read as "next round in 0 s": the loop would spin a core."""
    rounds: list[int] = []

    async def round() -> object:
        rounds.append(1)
        return outcome

    task = Periodic("outcome", round, 3600.0)  # type: ignore[arg-type]
    task.start()
    await until(lambda: task.failures == 1)
    await asyncio.sleep(0.02)
    assert len(rounds) == 1 and "not a delay" in (task.last_error or "")
    await task.stop()
