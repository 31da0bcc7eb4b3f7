"""The drift read-back of the reconciler's passes: files read back and compared with what
the executor's write cache vouches for, the entries of those that no longer hold it
forgotten (so the pass's batch reads and rewrites exactly those), the others dated now.

`invalidate_drifted` compares texts read in one batch (the kube-QoS files every pass, every
file in an asked-for full pass); `TurnReadBack` is a periodic pass's turn: one share of the
pods' files, read through a batch kept while the share's pods keep their plans.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

from koordlet.runtimehooks.spec import PodPlan
from resourceexecutor import ResourceExecutor, Updater
from resourceexecutor.file_io import KeptReader
from resourceexecutor.write_cache import CacheEntry, WriteCache


def file_places(updaters: Sequence[Updater]) -> tuple[list[str], list[int]]:
    """The files the updaters write, each once, and per updater its file's place among them
    (two updaters may share a file: v2's cpu.max holds quota and period)."""
    place: dict[str, int] = {}
    path_of = [place.setdefault(u.path, len(place)) for u in updaters]
    return list(place), path_of


def invalidate_drifted(executor: ResourceExecutor, updaters: Sequence[Updater],
                       texts: Sequence[str | None]) -> tuple[int, int]:
    """Compare every file the cache vouches for, as `texts` (one per updater) holds it,
    with the cache; forget the entries whose file no longer holds the cached value and
    date the others now (just seen: the executor need not look again for a force-update
    window). Returns (files compared, entries forgotten)."""
    cache = executor.cache
    entries, forget, remember = cache.entries, cache.forget, cache.remember
    now = executor.clock()
    compared = drifted = 0
    for updater, text in zip(updaters, texts):
        entry = entries.get(updater.key)
        if entry is None:
            continue
        compared += 1
        try:
            same = text is not None and (text == entry.text or updater.parse(text) == entry.value)
        except ValueError:
            same = False  # unreadable: let the batch find out and report it
        if same:
            remember(updater.key, entry.text, entry.value, now)
        else:
            forget(updater.key)
            drifted += 1
    return compared, drifted


@dataclass(frozen=True, slots=True)
class Vouched:
    """What a turn's check found every file to hold as the cache says: the texts the reader
    returned, the keys whose entries it dated and those entries, the keys the cache had no
    entry for (not compared)."""
    texts: list[str | None]
    keys: list[Hashable]
    entries: list[CacheEntry]
    unknown: list[Hashable]

    @classmethod
    def of(cls, texts: list[str | None], keys: Sequence[Hashable], cache: WriteCache) -> Vouched:
        seen = list(map(cache.entries.get, keys))
        return cls(texts, [key for key, entry in zip(keys, seen) if entry is not None],
                   [entry for entry in seen if entry is not None], [key for key, entry in zip(keys, seen) if entry is None])

    def again(self, cache: WriteCache, now: float) -> Vouched | None:
        """The same files found again (the reader gave back `texts`): the entries dated now
        when the cache still holds the ones seen and none for the others (the check's
        outcome is then the same: nothing drifted); None when one changed."""
        if any(map(cache.entries.get, self.unknown)):
            return None
        fresh = cache.date_again(self.keys, self.entries, now)
        return None if fresh is None else Vouched(self.texts, self.keys, fresh, self.unknown)


class TurnReadBack:
    """The files of one turn's share of the pods, read back by a periodic pass in one
    kept batch (executor IO's `kept_reader`: the directories the files are opened
    relative to and the buffers made once), kept while the share's pods keep their plans.
    Read in one batch, a turn's ~670 files at 1,000 pods cost 3.5 ms of CPU where forty
    25-pod chunks of whole paths cost 5.7 (bench.runtime_hooks's tree). When the reader
    finds every file as at the last check, which found nothing drifted (it gives back the
    same texts), and the cache still holds the entries that check dated, the entries are
    dated again without comparing file by file."""

    __slots__ = ("plans", "_updaters", "_keys", "_path_of", "_read", "_vouched")

    def __init__(self, plans: tuple[PodPlan, ...], updaters: list[Updater]) -> None:
        self.plans = plans
        self._updaters = updaters
        self._keys: list[Hashable] = []  # per updater, its cache key
        # per updater, its file's place in the batch; None while each has a file of its own
        # (v1: the places would be 0, 1, 2, ..., an int object each past 256, kept a turn)
        self._path_of: list[int] | None = None
        self._read: KeptReader | None = None  # made at the first check, in the IO thread
        self._vouched: Vouched | None = None  # what the last check found, when nothing drifted

    def holds(self, plans: tuple[PodPlan, ...]) -> bool:
        """Whether it was made for these very plans (the share's pods, none changed)."""
        return len(plans) == len(self.plans) and all(now is then for now, then in zip(plans, self.plans))

    def check(self, executor: ResourceExecutor) -> tuple[int, int]:
        """`invalidate_drifted` over the share's files, read now."""
        if not self._updaters:
            return 0, 0
        if self._read is None:
            paths, path_of = file_places(self._updaters)
            self._path_of = path_of if len(paths) < len(path_of) else None
            self._keys = [u.key for u in self._updaters]
            self._read = executor.io.kept_reader(paths)
        texts = self._read()
        vouched, self._vouched = self._vouched, None
        if vouched is not None and vouched.texts is texts:
            self._vouched = vouched.again(executor.cache, executor.clock())
            if self._vouched is not None:
                return len(vouched.keys), 0
        places = self._path_of
        compared, drifted = invalidate_drifted(executor, self._updaters,
                                               texts if places is None else [texts[at] for at in places])
        if not drifted:
            self._vouched = Vouched.of(texts, self._keys, executor.cache)
        return compared, drifted
