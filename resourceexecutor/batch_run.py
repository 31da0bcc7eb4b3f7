"""The mechanics of one batch: apply scheduled steps, settle outcomes, roll back.

`BatchRun` lives for one call of the executor.  It reads a file only when the
cache cannot vouch for its content (first sight, a stale entry, a field of a
shared file, or a rollback that needs the value from before), writes only when
the wanted value differs, and records what happened to each update.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any

from resourceexecutor.file_io import CgroupFileIO
from resourceexecutor.levelled_order import Step, derive_levels, levelled_schedule
from resourceexecutor.outcome import PROBLEM_OUTCOMES, Outcome, RollbackFailure
from resourceexecutor.updater import CacheKey, Updater
from resourceexecutor.write_cache import WriteCache
from system.errors import Gone, NotSupported, SystemFileError

_SETTLED = (Outcome.GONE, Outcome.NOT_SUPPORTED, Outcome.INVALID)


class BatchRun:
    """One batch in flight.  Not shared between threads; discarded after the call."""

    __slots__ = ("updaters", "io", "cache", "now", "use_cache", "rollback", "outcomes",
                 "errors", "writes", "undo", "saved", "stale_before", "unsupported",
                 "on_unsupported", "problems", "gone", "seen", "write_times", "prefetched")

    def __init__(self, updaters: Sequence[Updater], outcomes: list[Outcome], io: CgroupFileIO,
                 cache: WriteCache, now: float, *, use_cache: bool, rollback: bool,
                 unsupported: dict[CacheKey, float],
                 on_unsupported: Callable[[Updater, NotSupported], None]) -> None:
        self.updaters = updaters
        self.outcomes = outcomes
        self.io = io
        self.cache = cache
        self.now = now
        self.use_cache = use_cache
        self.rollback = rollback
        self.unsupported = unsupported   # key -> when the file was found absent
        self.on_unsupported = on_unsupported
        self.errors: dict[int, Exception] = {}
        self.problems: set[int] = set()   # indices now INVALID or FAILED
        self.gone: list[int] = []         # indices found GONE
        self.seen: set[CacheKey] = set()  # files this batch read or wrote (trusted even
                                          # when use_cache is off)
        self.writes = 0
        self.write_times: list[tuple[str, float, bool]] = []  # (resource, seconds, succeeded) per write
        self.undo: list[tuple[int, str]] = []   # (index, text before our first write)
        self.saved: set[CacheKey] = set()
        self.stale_before = now - cache.policy.force_update_after
        self.prefetched: dict[str, str] = {}  # path -> text read ahead, used by the first read

    def prefetch(self, indices: Sequence[int]) -> None:
        """Read the files these updates will read (those the cache cannot vouch for; every
        one without the cache) in one call of the C reader, past the kept-fd pool, when
        there are several: a read-back pass finds nearly every file as wanted and writes
        none, so reading them one by one through the pool only churned its fds. A
        read-modify-write file is read right before its write instead; a file that could
        not be read is left out: its own read raises the typed error then."""
        updaters, use_cache, stale_before = self.updaters, self.use_cache, self.stale_before
        get = self.cache.entries.get
        paths = list(dict.fromkeys(
            updater.path for i in indices
            if (updater := updaters[i]).problem is None and not updater.read_modify_write
            and (not use_cache or (entry := get(updater.key)) is None or entry.at < stale_before)
            and not self._known_absent(updater)))
        if len(paths) > 1:
            self.prefetched = {path: text for path, text in zip(paths, self.io.read_many(paths))
                               if text is not None}

    def _known_absent(self, updater: Updater) -> bool:
        """The file was found absent within the force-update window: not tried again yet."""
        absent_since = self.unsupported.get(updater.key)
        return absent_since is not None and absent_since >= self.stale_before

    def _read(self, updater: Updater) -> str:
        """The file's text: read ahead, else read now. What was read ahead serves the first
        read of its path only, which comes before any write to it (without the cache every
        file is read at its first update); later reads go to the file."""
        text = self.prefetched.pop(updater.path, None)
        return text if text is not None else self.io.read(updater.path)

    # ------------------------------------------------------------ steps

    def apply(self, step: Step, index: int) -> None:
        if self.outcomes[index] in _SETTLED:
            return
        updater = self.updaters[index]
        problem = updater.problem
        if problem is not None:
            if isinstance(problem, NotSupported):
                self.on_unsupported(updater, problem)
                self.settle(index, Outcome.NOT_SUPPORTED, problem)
            else:
                self.settle(index, Outcome.INVALID, problem)
            return
        if self._known_absent(updater):
            self.settle(index, Outcome.NOT_SUPPORTED,
                        NotSupported("file does not exist", updater.path))
            return
        try:
            if step is Step.MERGED:
                self._write_merged(index, updater)
            else:
                self._write_exact(index, updater)
        except SystemFileError as exc:
            self.fail(index, updater, exc)

    def plain_pass(self, indices: Sequence[int]) -> None:
        """Exact writes of plain updates, in order."""
        self.levelled_pass([(Step.EXACT, index) for index in indices])

    def levelled_pass(self, schedule: Sequence[tuple[Step, int]]) -> None:
        """Run a schedule.  The common case (the cache vouches for the file's value,
        no rollback) is decided inline and written through `_write`, the one write
        routine; everything else goes through apply()."""
        if not self.use_cache or self.rollback:
            for step, index in schedule:
                self.apply(step, index)
            return
        updaters, outcomes, merged_step = self.updaters, self.outcomes, Step.MERGED
        get = self.cache.entries.get
        write, fail = self._write, self.fail
        stale_before = self.stale_before
        for step, index in schedule:
            updater = updaters[index]
            entry = get(updater.key)
            if (entry is None or entry.at < stale_before or updater.problem is not None
                    or updater.read_modify_write or outcomes[index] in _SETTLED):
                self.apply(step, index)
                continue
            if step is merged_step:
                current = entry.value
                canonical = updater.merge(current, updater.canonical)  # type: ignore[misc]
                if canonical == current:
                    continue
                text = updater.wanted if canonical == updater.canonical else updater.format(canonical)
            else:
                if entry.text == updater.text:
                    continue
                text, canonical = updater.wanted, updater.canonical
            try:
                write(index, updater, text, text, canonical, None)
            except SystemFileError as exc:
                fail(index, updater, exc)

    def fail(self, index: int, updater: Updater, exc: SystemFileError) -> None:
        """Settle an update whose IO raised: gone, not supported, or failed."""
        self.cache.forget(updater.key)
        if isinstance(exc, Gone):
            self.settle(index, Outcome.GONE, exc)
        elif isinstance(exc, NotSupported):
            self.unsupported[updater.key] = self.now
            self.on_unsupported(updater, exc)
            self.settle(index, Outcome.NOT_SUPPORTED, exc)
        else:  # KernelRejected, unparsable kernel text, other IO errors
            self.settle(index, Outcome.FAILED, exc)

    def settle(self, index: int, outcome: Outcome, error: Exception | None) -> None:
        self.outcomes[index] = outcome
        if error is None:
            self.errors.pop(index, None)
            self.problems.discard(index)
            return
        self.errors[index] = _without_tracebacks(error)
        if outcome in PROBLEM_OUTCOMES:
            self.problems.add(index)
        elif outcome is Outcome.GONE:
            self.gone.append(index)

    def _remember(self, updater: Updater, text: str, value: Any) -> None:
        self.cache.remember(updater.key, text, value, self.now)
        self.seen.add(updater.key)

    def _fresh_entry(self, updater: Updater) -> Any:
        if not self.use_cache and updater.key not in self.seen:
            return None
        entry = self.cache.get(updater.key)
        if entry is None or entry.at < self.stale_before:
            return None
        return entry

    def _must_read(self, updater: Updater) -> bool:
        return updater.read_modify_write or (self.rollback and updater.key not in self.saved)

    def _write_exact(self, index: int, updater: Updater) -> None:
        entry = self._fresh_entry(updater)
        if entry is not None and entry.text == updater.text:
            return  # holds it already (e.g. pass one wrote the same): outcome stays
        if entry is not None and not self._must_read(updater):
            self._write(index, updater, updater.wanted, updater.wanted, updater.canonical, None)
            return
        current_text = self._read(updater)
        if updater.parse(current_text) == updater.canonical:
            self._remember(updater, updater.wanted, updater.canonical)
            return
        text = updater.format(updater.value, current_text) if updater.read_modify_write \
            else updater.wanted
        self._write(index, updater, text, updater.wanted, updater.canonical, current_text)

    def _write_merged(self, index: int, updater: Updater) -> None:
        merge = updater.merge
        assert merge is not None
        entry = self._fresh_entry(updater)
        current_text: str | None = None
        if entry is not None and not self._must_read(updater):
            current = entry.value
        else:
            current_text = self._read(updater)
            current = updater.parse(current_text)
        merged = merge(current, updater.canonical)
        if merged == current:
            if current_text is not None:
                self._remember(updater, updater.format(current), current)
            return
        merged_text = updater.format(merged)
        self._write(index, updater, merged_text, merged_text, merged, current_text)

    def _write(self, index: int, updater: Updater, text: str, fingerprint: str,
               canonical: Any, before: str | None) -> None:
        """The one write: IO, count, outcome, cache, and (rollback) the text before."""
        save = self.rollback and updater.key not in self.saved
        if save and before is None:
            before = self._read(updater)
        started = perf_counter()
        try:
            self.io.write(updater.path, text)
        except SystemFileError:
            self.write_times.append((updater.name, perf_counter() - started, False))
            raise
        self.write_times.append((updater.name, perf_counter() - started, True))
        if save:
            self.saved.add(updater.key)
            self.undo.append((index, before if before is not None else ""))
        self.writes += 1
        self.settle(index, Outcome.WRITTEN, None)
        self._remember(updater, fingerprint, canonical)

    # ------------------------------------------------------------ rollback

    def restore(self) -> tuple[RollbackFailure, ...]:
        """Put back the text each file held before our first write, levelled like the batch.

        Hierarchical files go top-down with the merge of their present and old
        value, then bottom-up with the old text: every intermediate state is one
        the kernel accepted before, so the restore needs no more luck than the
        batch did.  Restored keys leave the cache (next batch looks afresh).
        """
        failures: list[RollbackFailure] = []
        undo = self.undo
        updaters = [self.updaters[index] for index, _ in undo]
        levels = derive_levels([u.cgroup_dir for u in updaters])
        schedule = levelled_schedule(levels, [u.merge is not None for u in updaters])
        for step, position in schedule:
            updater = updaters[position]
            before = undo[position][1]
            try:
                if step is Step.MERGED:
                    self._restore_merged(updater, before)
                else:
                    self.io.write(updater.path, before)
                    self.writes += 1
            except SystemFileError as exc:
                failures.append(RollbackFailure(updater.path, before, exc))
        for updater in updaters:
            self.cache.forget(updater.key)
        return tuple(failures)

    def _restore_merged(self, updater: Updater, before: str) -> None:
        merge = updater.merge
        assert merge is not None
        current = updater.parse(self.io.read(updater.path))
        merged = merge(current, updater.parse(before))
        if merged != current:
            self.io.write(updater.path, updater.format(merged))
            self.writes += 1


def _without_tracebacks(error: Exception) -> Exception:
    """`error`, and the errors it was raised from or while handling, with their tracebacks
    dropped. A traceback's frames reach the frames that called them, this run's among them:
    a kept error made a cycle, which the daemon's collector policy (every collection's
    survivors frozen) left holding the batch's updaters until its hourly full pass."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        link.__traceback__ = None
        link = link.__cause__ or link.__context__
    return error
