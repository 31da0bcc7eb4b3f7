"""Remembers the last value written to each cgroup file, so repeats cost nothing.

An entry says "at time t this file held this text (we wrote or read it)".
While an entry is younger than `force_update_after` and the wanted text is the
same, the write is skipped.  Older entries make the executor look again (read,
write if different), so a value changed behind our back is repaired within
`force_update_after`; entries older than `expire_after` are forgotten by a
sweep run at most every `sweep_every` seconds.  Time comes from an injected
clock so tests move it without sleeping.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import repeat
from operator import itemgetter
from typing import Any, NamedTuple, Protocol

from resourceexecutor.dir_index import DirIndex

DEFAULT_FORCE_UPDATE_SECONDS = 60.0
DEFAULT_EXPIRE_SECONDS = 120.0
DEFAULT_SWEEP_SECONDS = 60.0


class CacheEntry(NamedTuple):
    text: str      # what the file held, as kernel text
    value: Any     # the same, in the resource's canonical form (used for merges)
    at: float      # clock time we wrote or read it


# tuple.__new__ builds a NamedTuple without its Python-level __new__: this runs per write.
_new_entry = tuple.__new__
_TEXT, _VALUE = itemgetter(0), itemgetter(1)  # a CacheEntry's text and value, for map()


class Decision(Enum):
    """What the cache says about one wanted write."""

    SKIP = "skip"                      # fresh entry with the same text
    WRITE = "write"                    # fresh entry with another text: the file differs, write
    LOOK_FIRST = "look_first"          # no entry or a stale one: read the file, write if different


class Keyed(Protocol):
    @property
    def key(self) -> Hashable: ...

    @property
    def text(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class CachePolicy:
    force_update_after: float = DEFAULT_FORCE_UPDATE_SECONDS
    expire_after: float = DEFAULT_EXPIRE_SECONDS
    sweep_every: float = DEFAULT_SWEEP_SECONDS

    def __post_init__(self) -> None:
        if self.force_update_after < 0 or self.expire_after < 0 or self.sweep_every < 0:
            raise ValueError("cache durations must not be negative")


def decide(entry: CacheEntry | None, text: str | None, now: float,
           force_update_after: float) -> Decision:
    """The cache decision for one wanted text (pure; `WriteCache.misses` is its batch form)."""
    if entry is None or entry.at < now - force_update_after:
        return Decision.LOOK_FIRST
    if text is not None and entry.text == text:
        return Decision.SKIP
    return Decision.WRITE


class WriteCache:
    """Last-known text per cgroup file key, a (resource, cgroup dir) pair.
    Not thread-safe: one owner (the executor)."""

    def __init__(self, policy: CachePolicy | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy or CachePolicy()
        self.clock = clock
        self._entries: dict[Hashable, CacheEntry] = {}
        self._dirs = DirIndex()
        self._last_sweep = clock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> CacheEntry | None:
        return self._entries.get(key)

    def decide(self, key: Hashable, text: str | None, now: float) -> Decision:
        return decide(self._entries.get(key), text, now, self.policy.force_update_after)

    def misses(self, updaters: Sequence[Keyed], now: float) -> list[int]:
        """Indices of updaters that are not a SKIP.  The hot path: no allocation per hit."""
        get = self._entries.get
        stale_before = now - self.policy.force_update_after
        return [index for index, updater in enumerate(updaters)
                if (entry := get(updater.key)) is None
                or entry.at < stale_before
                or entry.text != updater.text]

    @property
    def entries(self) -> dict[Hashable, CacheEntry]:
        """The live table, for the executor's hot loop only (use remember/forget to change)."""
        return self._entries

    def remember(self, key: Hashable, text: str, value: Any, now: float) -> None:
        entries = self._entries
        if key not in entries:
            self._dirs.add(key)
        entries[key] = _new_entry(CacheEntry, (text, value, now))

    def date_again(self, keys: Sequence[Hashable], seen: Sequence[CacheEntry],
                   now: float) -> list[CacheEntry] | None:
        """Date the entries of `keys` now, when each is still what `seen` holds (the entries
        the caller saw, compared by value): the new entries; None, and nothing changed, when
        one differs or went. For a caller that found the files as it found them when it saw
        those entries (the reconciler's turn read-back): no Python step per file."""
        entries = self._entries
        if list(map(entries.get, keys)) != seen:
            return None
        fresh = list(map(_new_entry, repeat(CacheEntry), zip(map(_TEXT, seen), map(_VALUE, seen), repeat(now))))
        entries.update(zip(keys, fresh))
        return fresh

    def forget(self, key: Hashable) -> None:
        if self._entries.pop(key, None) is not None:
            self._dirs.discard(key)

    def forget_cgroup(self, cgroup_dir: str) -> list[Any]:
        """Drop the entries of `cgroup_dir` and of every cgroup below it; returns their
        keys.  Costs that subtree's entries, whatever the size of the cache."""
        keys = self._dirs.pop_under(cgroup_dir)
        pop = self._entries.pop
        for key in keys:
            pop(key, None)
        return keys

    def forget_where(self, predicate: Callable[[Hashable], bool]) -> int:
        """Drop every entry whose key matches (a scan of the whole cache; a removed
        cgroup goes through `forget_cgroup`); returns how many went."""
        doomed = [key for key in self._entries if predicate(key)]
        for key in doomed:
            self.forget(key)
        return len(doomed)

    def clear(self) -> None:
        self._entries.clear()
        self._dirs.clear()

    def sweep_if_due(self, now: float) -> int | None:
        """Forget entries older than `expire_after`, at most once per `sweep_every`.

        Returns how many went, or None when no sweep was due."""
        if now - self._last_sweep < self.policy.sweep_every:
            return None
        self._last_sweep = now
        oldest_kept = now - self.policy.expire_after
        doomed = [key for key, entry in self._entries.items() if entry.at < oldest_kept]
        for key in doomed:
            self.forget(key)
        return len(doomed)
