"""What a handler leaves for after its answer: run in order, by itself after a delay or at
once before the next event, never lost to a callback that raises."""

from __future__ import annotations

from koordlet.runtimehooks.follow_ups import FollowUps
from tests.polling import until


async def test_queued_work_runs_by_itself_after_the_delay() -> None:
    ran: list[int] = []
    follow_ups = FollowUps(delay=0.002)
    follow_ups.add(ran.append, 1)
    follow_ups.add(ran.append, 2)
    assert ran == []  # not inside the handler that queued it
    await until(lambda: ran == [1, 2])
    assert follow_ups.pending == 0


async def test_run_takes_everything_queued_in_order_and_the_timer_adds_nothing() -> None:
    ran: list[int] = []
    follow_ups = FollowUps(delay=0.002)
    for i in range(3):
        follow_ups.add(ran.append, i)
    follow_ups.run()
    assert ran == [0, 1, 2]
    follow_ups.add(ran.append, 3)  # a new round arms a new timer
    await until(lambda: ran == [0, 1, 2, 3])


async def test_a_callback_that_raises_does_not_stop_the_others() -> None:
    ran: list[str] = []

    def broken() -> None:
        raise ValueError("bug")

    follow_ups = FollowUps(delay=3600.0)
    follow_ups.add(broken)
    follow_ups.add(ran.append, "after")
    follow_ups.run()
    assert ran == ["after"] and follow_ups.pending == 0


def test_without_a_loop_work_runs_at_once() -> None:
    ran: list[int] = []
    FollowUps().add(ran.append, 1)
    assert ran == [1]
