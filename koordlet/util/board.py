"""Board: a current value and the listeners told of each change.

Every fan-out of the daemon goes through one: a listener that raises is logged with the
board's name and the others still hear; `publish` tells only of a real change (by
equality); unsubscribing twice is harmless. `Signal` is the value-less kind, for "something
changed, look again" (the ORM's allocations).
"""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

import structlog

log = structlog.get_logger(__name__)

T = TypeVar("T")
Unsubscribe = Callable[[], None]


class Listeners(Generic[T]):
    """The guarded listener list behind a Board or a Signal."""

    def __init__(self, name: str) -> None:
        self.name = name
        # replaced, never changed in place: a notify in progress keeps the tuple it began with
        # (a listener may subscribe or leave while it runs), and notifying copies nothing
        self._listeners: tuple[Callable[[T], object], ...] = ()

    def add(self, listener: Callable[[T], object]) -> Unsubscribe:
        self._listeners += (listener,)

        def unsubscribe() -> None:
            listeners = list(self._listeners)
            if listener in listeners:
                listeners.remove(listener)
                self._listeners = tuple(listeners)

        return unsubscribe

    def notify(self, value: T) -> None:
        for listener in self._listeners:
            try:
                listener(value)
            except Exception:  # one listener's bug must not keep the news from the others
                log.exception("board_listener_failed", board=self.name)

    def __len__(self) -> int:
        return len(self._listeners)


class Board(Generic[T]):
    def __init__(self, name: str, initial: T) -> None:
        self._value = initial
        self._listeners: Listeners[T] = Listeners(name)

    @property
    def name(self) -> str:
        return self._listeners.name

    def current(self) -> T:
        return self._value

    def publish(self, value: T) -> bool:
        """Make `value` current; True (and listeners told) when it differs from the last."""
        if value == self._value:
            return False
        self._value = value
        self._listeners.notify(value)
        return True

    def subscribe(self, listener: Callable[[T], object]) -> Unsubscribe:
        return self._listeners.add(listener)


class Signal:
    """A change with no value: listeners are called with no argument."""

    def __init__(self, name: str) -> None:
        self._listeners: Listeners[None] = Listeners(name)

    def subscribe(self, listener: Callable[[], object]) -> Unsubscribe:
        return self._listeners.add(lambda _none: listener())

    def fire(self) -> None:
        self._listeners.notify(None)
