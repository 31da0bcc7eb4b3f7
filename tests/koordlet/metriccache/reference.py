"""Reference figures the metric cache's readers are checked against."""

from __future__ import annotations

from typing import Iterable


def sequential_mean(values: Iterable[float]) -> float:
    """One float64 addition after the other, oldest first (as koordlet's Go sums a window),
    divided by the count."""
    total = 0.0
    count = 0
    for value in values:
        total += value
        count += 1
    return total / count
