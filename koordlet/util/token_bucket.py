"""A token bucket (golang.org/x/time/rate's Limiter.Allow): `qps` tokens a second, at
most `burst` saved. The reporter limits NodeMetric status updates with one (koordlet: 0.1
QPS, burst 2), the PodResources server its calls (kubelet: 100 QPS, burst 10)."""

from __future__ import annotations

import time
from typing import Callable


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("a token bucket needs qps > 0 and burst >= 1")
        self._qps = qps
        self._burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def reserve(self) -> float:
        """Take a token now or one still to come: the seconds to wait before using it
        (x/time/rate's Reserve; the API client's request throttle waits that long)."""
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def allow(self) -> bool:
        """Take a token if one is there."""
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False
