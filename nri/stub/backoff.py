"""Reconnect delays: exponential, capped, reset after a good connection."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    initial: float = 0.1
    factor: float = 2.0
    cap: float = 5.0

    def __post_init__(self) -> None:
        if self.initial <= 0 or self.factor < 1.0 or self.cap < self.initial:
            raise ValueError("backoff needs 0 < initial <= cap and factor >= 1")

    def delay(self, failures: int) -> float:
        """Delay before the next attempt after `failures` consecutive failures
        (0 failures: reconnect right after a connection that had worked)."""
        if failures <= 0:
            return 0.0
        return min(self.cap, self.initial * self.factor ** (failures - 1))
