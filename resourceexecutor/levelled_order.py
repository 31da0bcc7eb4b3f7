"""Pure decisions for hierarchical writes: levels, merges and the write schedule.

Some cgroup values are bounded by the parent's (v1 cpuset.cpus/mems: a child
may not hold a CPU its parent lacks; v1 cfs quota: a child may not exceed its
parent; v2 memory.min/low/high: protection is clipped by the parent).  To move
a tree from one valid state to another without the kernel ever seeing a child
ask for more than its parent, pass one walks top-down writing a value that
covers both the old and the new one (the union of cpusets, the larger number),
and pass two walks bottom-up writing the exact values.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

MergeFn = Callable[[Any, Any], Any]

UNLIMITED = -1  # canonical "no limit" for quota and memory values


class Step(Enum):
    """Which value a scheduled write puts into the file."""

    MERGED = "merged"  # pass one, hierarchical resource: covers old and new
    EXACT = "exact"    # the value asked for


def union_cpuset(current: frozenset[int], wanted: frozenset[int]) -> frozenset[int]:
    """The looser of two cpusets: every CPU either holds."""
    return current | wanted


def larger_limit(current: int, wanted: int) -> int:
    """The larger of two limits, where -1 (unlimited) is larger than any number."""
    if current == UNLIMITED or wanted == UNLIMITED:
        return UNLIMITED
    return current if current > wanted else wanted


def depth_of(cgroup_dir: str) -> int:
    """How many directories below the hierarchy root: "" -> 0, "a/b" -> 2."""
    trimmed = cgroup_dir.strip("/")
    return trimmed.count("/") + 1 if trimmed else 0


def is_ancestor(parent_dir: str, child_dir: str) -> bool:
    """True when child_dir lies strictly below parent_dir (whole path components)."""
    parent = parent_dir.strip("/")
    child = child_dir.strip("/")
    if parent == child:
        return False
    return parent == "" or child.startswith(parent + "/")


def derive_levels(cgroup_dirs: Sequence[str]) -> list[list[int]]:
    """Group indices by directory depth, shallowest first.

    A parent dir is a prefix of its child's and so is strictly shallower: any
    top-down walk of these levels visits every parent before its children,
    whatever unrelated trees share the batch.  Order within a level is the
    caller's.
    """
    by_depth: dict[int, list[int]] = {}
    for index, cgroup_dir in enumerate(cgroup_dirs):
        by_depth.setdefault(depth_of(cgroup_dir), []).append(index)
    return [by_depth[depth] for depth in sorted(by_depth)]


def levelled_schedule(levels: Sequence[Sequence[int]],
                      hierarchical: Sequence[bool]) -> list[tuple[Step, int]]:
    """The write order for a levelled batch.

    Pass one, top-down: a hierarchical update writes its MERGED value, a plain
    one its EXACT value (plain resources are written once, in this pass).
    Pass two, bottom-up: each hierarchical update writes its EXACT value.
    `hierarchical[i]` says whether update i has a merge.
    """
    schedule: list[tuple[Step, int]] = []
    for level in levels:
        for index in level:
            schedule.append((Step.MERGED if hierarchical[index] else Step.EXACT, index))
    for level in reversed(levels):
        for index in reversed(level):
            if hierarchical[index]:
                schedule.append((Step.EXACT, index))
    return schedule
