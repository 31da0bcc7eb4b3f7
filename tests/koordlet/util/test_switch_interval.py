"""LoweredSwitchInterval: the interval is low while any thread is inside, as before after."""

from __future__ import annotations

import sys
import threading

import pytest

from koordlet.util.switch_interval import LoweredSwitchInterval


@pytest.fixture
def interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def test_inside_it_is_lowered_and_after_it_is_restored(interval):
    lowered = LoweredSwitchInterval(0.0005)
    with lowered:
        assert sys.getswitchinterval() == pytest.approx(0.0005)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_it_stays_lowered_until_the_last_of_two_threads_leaves(interval):
    lowered = LoweredSwitchInterval(0.0005)
    first_inside, second_done, first_may_leave = threading.Event(), threading.Event(), threading.Event()
    seen: list[float] = []

    def first() -> None:
        with lowered:
            first_inside.set()
            first_may_leave.wait(30)
            seen.append(sys.getswitchinterval())

    def second() -> None:
        first_inside.wait(30)
        with lowered:
            pass
        seen.append(sys.getswitchinterval())  # the first is still inside
        second_done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    second_done.wait(30)
    first_may_leave.set()
    for thread in threads:
        thread.join(30)
    assert seen == [pytest.approx(0.0005), pytest.approx(0.0005)]
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_it_never_raises_an_interval_already_lower(interval):
    sys.setswitchinterval(0.0001)
    lowered_before = sys.getswitchinterval()
    with LoweredSwitchInterval(0.0005):
        assert sys.getswitchinterval() == lowered_before
    assert sys.getswitchinterval() == lowered_before


def test_many_renders_leave_an_odd_interval_where_it_was(interval):
    # the interpreter keeps whole microseconds: 0.000501 reads back as 0.000500999..., which
    # set again as read would become 0.0005, and so on down at every render
    sys.setswitchinterval(0.000501)
    before = sys.getswitchinterval()
    lowered = LoweredSwitchInterval(0.0002)
    for _ in range(200):
        with lowered:
            pass
    assert sys.getswitchinterval() == before


def test_an_interval_that_is_not_positive_is_refused():
    with pytest.raises(ValueError):
        LoweredSwitchInterval(0.0)
