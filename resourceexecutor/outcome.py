"""What became of each requested cgroup write, and of a whole batch.

A batch keeps its outcomes as one flat list parallel to the updaters it was
given, plus a sparse map of errors, so that a steady-state batch of thousands
of cached updates allocates no per-update result objects.  `UpdateResult`
values are built only when a caller iterates or indexes.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from resourceexecutor.updater import Updater


class Outcome(Enum):
    """The closed set of things that can happen to one update."""

    WRITTEN = "written"              # the kernel accepted our value
    SKIPPED = "skipped"              # the file already holds it (cache or first-sight read)
    NOT_SUPPORTED = "not_supported"  # no such file on this kernel / cgroup version
    INVALID = "invalid"              # the validator refused the value; nothing written
    GONE = "gone"                    # the cgroup directory vanished (normal life)
    FAILED = "failed"                # the kernel refused the write, or another IO error


# Outcomes that mean "the file does not hold what was asked and that is a problem".
PROBLEM_OUTCOMES: frozenset[Outcome] = frozenset({Outcome.INVALID, Outcome.FAILED})


@dataclass(frozen=True, slots=True)
class UpdateResult:
    """The outcome of one update; `error` is set for every outcome but WRITTEN/SKIPPED."""

    updater: Updater
    outcome: Outcome
    error: Exception | None = None


@dataclass(frozen=True, slots=True)
class RollbackFailure:
    """A value we could not restore while rolling a batch back."""

    path: str
    text: str
    error: Exception


@dataclass(frozen=True, slots=True)
class BatchResult:
    """Outcomes of one batch, in the order the updaters were given.

    `outcomes[i]` belongs to `updaters[i]`; `errors` holds the error for each
    index whose outcome is not WRITTEN or SKIPPED.  `rolled_back` is True when
    a rollback was requested and a problem triggered it: the WRITTEN outcomes
    then describe the forward pass, and the files were restored afterwards
    (except those listed in `rollback_failures`).
    """

    updaters: Sequence[Updater]
    outcomes: list[Outcome]
    errors: Mapping[int, Exception] = field(default_factory=dict)
    writes: int = 0
    rolled_back: bool = False
    rollback_failures: tuple[RollbackFailure, ...] = ()

    def __len__(self) -> int:
        return len(self.outcomes)

    def __getitem__(self, index: int) -> UpdateResult:
        return UpdateResult(self.updaters[index], self.outcomes[index], self.errors.get(index))

    def __iter__(self) -> Iterator[UpdateResult]:
        for index in range(len(self.outcomes)):
            yield self[index]

    @property
    def ok(self) -> bool:
        """True when no update was INVALID or FAILED (gone / not supported are normal)."""
        return not any(outcome in PROBLEM_OUTCOMES for outcome in self.outcomes)

    def counts(self) -> Counter[Outcome]:
        return Counter(self.outcomes)

    def with_outcome(self, outcome: Outcome) -> list[UpdateResult]:
        return [self[i] for i, seen in enumerate(self.outcomes) if seen is outcome]
