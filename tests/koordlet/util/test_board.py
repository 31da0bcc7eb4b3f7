"""Board and Signal: current value, change-only notification, guarded listeners."""

from __future__ import annotations

from structlog.testing import capture_logs

from koordlet.util.board import Board, Signal


def test_publish_tells_listeners_only_of_a_real_change() -> None:
    board: Board[int] = Board("numbers", 0)
    heard: list[int] = []
    board.subscribe(heard.append)
    assert not board.publish(0)
    assert board.publish(1) and board.publish(2)
    assert not board.publish(2)
    assert heard == [1, 2] and board.current() == 2


def test_a_listener_that_raises_is_logged_and_the_others_still_hear() -> None:
    board: Board[str] = Board("words", "")
    heard: list[str] = []

    def bad(value: str) -> None:
        raise RuntimeError("listener bug")

    board.subscribe(bad)
    board.subscribe(heard.append)
    with capture_logs() as logs:
        board.publish("x")
    assert heard == ["x"]
    assert [(e["event"], e["board"]) for e in logs] == [("board_listener_failed", "words")]


def test_unsubscribe_stops_the_news_and_twice_is_harmless() -> None:
    board: Board[int] = Board("n", 0)
    heard: list[int] = []
    unsubscribe = board.subscribe(heard.append)
    unsubscribe()
    unsubscribe()
    board.publish(5)
    assert heard == []


def test_a_signal_calls_listeners_without_a_value() -> None:
    signal = Signal("changed")
    calls: list[str] = []
    unsubscribe = signal.subscribe(lambda: calls.append("a"))
    signal.subscribe(lambda: calls.append("b"))
    signal.fire()
    unsubscribe()
    signal.fire()
    assert calls == ["a", "b", "b"]


def test_listeners_that_join_or_leave_during_a_notify_count_from_the_next_one() -> None:
    board: Board[int] = Board("n", 0)
    heard: list[tuple[str, int]] = []
    unsubscribe_b = None

    def a(value: int) -> None:
        heard.append(("a", value))
        if value == 1:
            assert unsubscribe_b is not None
            unsubscribe_b()  # leaves while this notify runs: still told of 1
            board.subscribe(lambda v: heard.append(("c", v)))  # joins: told from 2 on

    board.subscribe(a)
    unsubscribe_b = board.subscribe(lambda v: heard.append(("b", v)))
    board.publish(1)
    board.publish(2)
    assert heard == [("a", 1), ("b", 1), ("a", 2), ("c", 2)]
