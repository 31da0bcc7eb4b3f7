"""Which (resource, cgroup dir) keys live in each cgroup directory, as a tree.

A removed cgroup takes its entries and everything below it; with this index
that costs the entries and directories of that subtree, not a scan of every key.
"""
from __future__ import annotations

from typing import Any

Key = Any  # a (resource, cgroup dir) pair, or any indexable whose [1] is the dir


def _parent(cgroup_dir: str) -> str:
    return cgroup_dir.rpartition("/")[0]


class DirIndex:
    """Keys by their directory (`key[1]`, slashes at the ends ignored).  One owner."""

    __slots__ = ("_keys", "_kids")

    def __init__(self) -> None:
        # dir -> keys in it: a list, as a cgroup has a few (a set of 5 is 728 B, a list ~100)
        self._keys: dict[str, list[Key]] = {}
        self._kids: dict[str, set[str]] = {}        # dir -> child dirs that hold keys below

    def __len__(self) -> int:
        return sum(map(len, self._keys.values()))

    def add(self, key: Key) -> None:
        cgroup_dir = key[1].strip("/")
        keys = self._keys.get(cgroup_dir)
        if keys is not None:
            if key not in keys:
                keys.append(key)
            return
        self._keys[cgroup_dir] = [key]
        self._link(cgroup_dir)

    def discard(self, key: Key) -> None:
        cgroup_dir = key[1].strip("/")
        keys = self._keys.get(cgroup_dir)
        if keys is None or key not in keys:
            return
        keys.remove(key)
        if not keys:
            del self._keys[cgroup_dir]
            self._prune(cgroup_dir)

    def pop_under(self, cgroup_dir: str) -> list[Key]:
        """Remove and return the keys of `cgroup_dir` and of every directory below it."""
        top = cgroup_dir.strip("/")
        popped: list[Key] = []
        stack = [top]
        while stack:
            current = stack.pop()
            keys = self._keys.pop(current, None)
            if keys:
                popped.extend(keys)
            kids = self._kids.pop(current, None)
            if kids:
                stack.extend(kids)
        if top:
            siblings = self._kids.get(_parent(top))
            if siblings is not None:
                siblings.discard(top)
                self._prune(_parent(top))
        return popped

    def clear(self) -> None:
        self._keys.clear()
        self._kids.clear()

    def _exists(self, cgroup_dir: str) -> bool:
        return cgroup_dir in self._keys or cgroup_dir in self._kids

    def _link(self, cgroup_dir: str) -> None:
        """Hang a new directory under its parents, creating the missing ones."""
        while cgroup_dir:
            parent = _parent(cgroup_dir)
            known = self._exists(parent)
            self._kids.setdefault(parent, set()).add(cgroup_dir)
            if known:
                return
            cgroup_dir = parent

    def _prune(self, cgroup_dir: str) -> None:
        """Drop directories left with no keys and nothing below, walking up."""
        while cgroup_dir not in self._keys and not self._kids.get(cgroup_dir):
            self._kids.pop(cgroup_dir, None)
            if not cgroup_dir:
                return
            parent = _parent(cgroup_dir)
            siblings = self._kids.get(parent)
            if siblings is None:
                return
            siblings.discard(cgroup_dir)
            cgroup_dir = parent
