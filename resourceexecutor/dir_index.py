"""Which (resource, cgroup dir) keys live in each cgroup directory, and in every subtree.

A removed cgroup takes its entries and everything below it; with this index that costs
the entries and directories of that subtree, not a scan of every key. The directories
are kept sorted: the ones below "a/b" are the run of those starting with "a/b/", found by
bisection, so nothing is kept per parent directory.
"""
from __future__ import annotations

from bisect import bisect_left, insort
from typing import Any

Key = Any  # a (resource, cgroup dir) pair, or any indexable whose [1] is the dir


class DirIndex:
    """Keys by their directory (`key[1]`, slashes at the ends ignored).  One owner."""

    __slots__ = ("_keys", "_dirs")

    def __init__(self) -> None:
        # dir -> keys in it: a tuple, as a cgroup has a few (a list of one is two blocks, 80 B)
        self._keys: dict[str, tuple[Key, ...]] = {}
        self._dirs: list[str] = []  # the dirs of _keys, sorted

    def __len__(self) -> int:
        return sum(map(len, self._keys.values()))

    def add(self, key: Key) -> None:
        cgroup_dir = key[1].strip("/")
        keys = self._keys.get(cgroup_dir)
        if keys is None:
            self._keys[cgroup_dir] = (key,)
            insort(self._dirs, cgroup_dir)
        elif key not in keys:
            self._keys[cgroup_dir] = (*keys, key)

    def discard(self, key: Key) -> None:
        cgroup_dir = key[1].strip("/")
        keys = self._keys.get(cgroup_dir)
        if keys is None or key not in keys:
            return
        if len(keys) > 1:
            self._keys[cgroup_dir] = tuple(kept for kept in keys if kept != key)
            return
        del self._keys[cgroup_dir]
        del self._dirs[bisect_left(self._dirs, cgroup_dir)]

    def pop_under(self, cgroup_dir: str) -> list[Key]:
        """Remove and return the keys of `cgroup_dir` and of every directory below it."""
        top = cgroup_dir.strip("/")
        dirs = self._dirs
        if top:
            # below top: from top + "/" up to top + "0", the character after "/"
            start, end = bisect_left(dirs, top + "/"), bisect_left(dirs, top + "0")
            gone = dirs[start:end]
            del dirs[start:end]
            if top in self._keys:
                gone.append(top)
                del dirs[bisect_left(dirs, top)]
        else:
            gone = dirs[:]
            dirs.clear()
        popped: list[Key] = []
        for directory in gone:
            popped += self._keys.pop(directory)
        return popped

    def clear(self) -> None:
        self._keys.clear()
        self._dirs.clear()
