"""Which best-effort pods the evictors take, and when they may take again: the parts the
memory and CPU evictors share (koordlet resmanager memory_evict.go / cpu_evict.go, v1.1).

Both order candidates lowest priority first (an unset priority counts as 0, the API
server's default); they differ in what comes next and in what an eviction releases:
- memory: the largest memory user first; pods with no usage figure after those with one,
  by name; each releases its memory usage;
- CPU: the highest usage/request first; each releases its batch-cpu request.
Victims are taken in order until what they release covers the need.

Cool-down: only an eviction that happened starts it (an eviction the evictor refused or
could not do leaves the next round free to try again).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True, slots=True)
class Candidate:
    """A best-effort pod as eviction sees it; `usage` in bytes (memory) or milli-cores (cpu),
    `request` its batch-cpu request in milli-cores."""

    uid: str
    name: str
    priority: int | None
    usage: int | None
    request: int = 0


def _priority_first(tie: Callable[[Candidate, Candidate], int]) -> Callable[[Candidate, Candidate], int]:
    def compare(a: Candidate, b: Candidate) -> int:
        pa, pb = a.priority or 0, b.priority or 0
        if pa != pb:
            return -1 if pa < pb else 1
        return tie(a, b)

    return compare


def _larger_usage_first(a: Candidate, b: Candidate) -> int:
    if a.usage is not None and b.usage is not None:
        return (b.usage > a.usage) - (b.usage < a.usage)
    if a.usage is None and b.usage is None:
        return (b.name > a.name) - (b.name < a.name)
    return -1 if b.usage is None else 1


def _pressure(c: Candidate) -> float:
    return (c.usage or 0) / c.request if c.request > 0 else 0.0


def _higher_pressure_first(a: Candidate, b: Candidate) -> int:
    ra, rb = _pressure(a), _pressure(b)
    return (rb > ra) - (rb < ra)


def order_memory_victims(candidates: Sequence[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=functools.cmp_to_key(_priority_first(_larger_usage_first)))


def order_cpu_victims(candidates: Sequence[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=functools.cmp_to_key(_priority_first(_higher_pressure_first)))


def take_until(ordered: Sequence[Candidate], need: int, released_by: Callable[[Candidate], int]) -> list[Candidate]:
    """Victims in order until what they release covers `need`."""
    victims: list[Candidate] = []
    released = 0
    for candidate in ordered:
        if released >= need:
            break
        victims.append(candidate)
        released += released_by(candidate)
    return victims


def memory_released(candidate: Candidate) -> int:
    return candidate.usage or 0  # unknown usage counts as nothing released


def request_released(candidate: Candidate) -> int:
    return candidate.request


@dataclass(slots=True)
class CoolDown:
    """No eviction for `seconds` after one that happened."""

    seconds: float
    last: float | None = None

    def active(self, now: float) -> bool:
        return self.last is not None and now < self.last + self.seconds

    def evicted(self, now: float) -> None:
        self.last = now
