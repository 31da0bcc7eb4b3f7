"""Deadlines found expired together (the loop was blocked) are reported in deadline order."""

from __future__ import annotations

from nri.ttrpc.deadline_timer import DeadlineTimer


class FakeLoop:
    """Just enough of a loop: a settable time and the one timer the DeadlineTimer arms."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list = []

    def time(self) -> float:
        return self.now

    def call_at(self, when, callback):
        self.timers.append((when, callback))
        return self

    def cancel(self) -> None:
        self.timers.clear()


def test_late_expiries_arrive_in_deadline_order_not_insertion_order() -> None:
    loop = FakeLoop()
    fired: list[int] = []
    timer = DeadlineTimer(loop, fired.append)  # type: ignore[arg-type]
    timer.add(3, 0.010)
    timer.add(1, 0.030)
    timer.add(2, 0.020)
    loop.now = 0.050  # the loop was blocked 50 ms: all three are due when the timer fires
    when, fire = loop.timers[-1]
    fire()
    assert fired == [3, 2, 1]


def test_equal_deadlines_keep_the_order_they_were_added() -> None:
    loop = FakeLoop()
    fired: list[int] = []
    timer = DeadlineTimer(loop, fired.append)  # type: ignore[arg-type]
    for key in (5, 4, 6):
        timer.add(key, 1.0)
    loop.now = 2.0
    loop.timers[-1][1]()
    assert fired == [5, 4, 6]
