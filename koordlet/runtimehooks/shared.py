"""One object handed out for values that are alike, so what is kept a pod is not a copy."""

from __future__ import annotations

from typing import Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T", bound=Hashable)


class SharedValues(Generic[K, V]):
    """The value first kept under each key, at most `limit` keys (cleared when full: the
    values are immutable and only shared, so a cleared one is just made again).  One owner."""

    __slots__ = ("_kept", "limit")

    def __init__(self, limit: int) -> None:
        self._kept: dict[K, V] = {}
        self.limit = limit

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: K) -> V | None:
        return self._kept.get(key)

    def keep(self, key: K, value: V) -> V:
        if len(self._kept) >= self.limit:
            self._kept.clear()
        self._kept[key] = value
        return value

    def share(self: SharedValues[T, T], value: T) -> T:
        """The object kept for a value equal to `value` (itself its key), else `value`, kept."""
        kept = self._kept.get(value)
        return kept if kept is not None else self.keep(value, value)
