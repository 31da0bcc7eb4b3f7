"""Running a step function (koordlet/util/steps.py) by hand in a test."""

from __future__ import annotations

from typing import Any, Generator


def driven(steps: Generator[None, None, Any]) -> tuple[int, Any]:
    """(the yields, the value) of a step function run to its end."""
    yields = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return yields, done.value
        yields += 1
