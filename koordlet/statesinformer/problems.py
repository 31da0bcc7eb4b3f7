"""Invalid pod input (QoS label, annotation, JSON), and logging it once per pod in bounded memory.

The informer sees the same pod again on every event and every poll; without this
a bad annotation would be logged every 10 s forever. Remembered problems
are dropped when their pod goes, and the oldest pods beyond `capacity` are
dropped first, so a churn of bad pods cannot grow the set.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterable

import structlog

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class InputProblem:
    """A label or annotation that is present but unusable; it is treated as absent."""

    key: str
    value: str
    reason: str


DEFAULT_CAPACITY = 4096  # pods with a remembered problem


class ProblemLog:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._seen: OrderedDict[str, set[tuple[str, str]]] = OrderedDict()

    def report(self, pod_uid: str, pod_name: str, problems: Iterable[InputProblem]) -> None:
        """Log the problems of this pod not logged before."""
        for problem in problems:
            seen = self._seen.get(pod_uid)
            if seen is None:
                seen = self._seen[pod_uid] = set()
                while len(self._seen) > self._capacity:
                    self._seen.popitem(last=False)
            if (problem.key, problem.value) in seen:
                continue
            seen.add((problem.key, problem.value))
            log.warning("pod_input_invalid", pod_uid=pod_uid, pod=pod_name,
                        key=problem.key, value=problem.value[:256], reason=problem.reason)

    def forget(self, pod_uid: str) -> None:
        self._seen.pop(pod_uid, None)

    def __len__(self) -> int:
        """Pods with a remembered problem."""
        return len(self._seen)
