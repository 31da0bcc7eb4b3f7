"""The daemon's collector policy: applied and undone in-process, and the periodic refresh
that frees a cycle that became garbage after it was frozen."""

from __future__ import annotations

import asyncio
import gc
import weakref

from koordlet.daemon import gc_policy


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_apply_sets_the_young_threshold_keeps_survivors_frozen_and_undo_restores() -> None:
    before = gc.get_threshold()
    undo = gc_policy.apply_after_start_up(before[0] + 1234)
    try:
        assert gc.get_threshold()[0] == before[0] + 1234 and gc.get_freeze_count() > 0
        gc.unfreeze()
        gc.collect()  # a full collection: its survivors are frozen again
        assert gc.get_freeze_count() > 0
    finally:
        undo()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_survivors_are_frozen_after_passes_of_the_generation_named_or_older() -> None:
    assert [gc_policy.freeze_after_pass("stop", generation, 0) for generation in (0, 1, 2)] == [True] * 3
    assert [gc_policy.freeze_after_pass("stop", generation, 2) for generation in (0, 1, 2)] == [False, False, True]
    assert not any(gc_policy.freeze_after_pass("start", generation, 0) for generation in (0, 1, 2))


def test_after_start_up_a_young_pass_freezes_what_survived_it() -> None:
    undo = gc_policy.apply_after_start_up()
    try:
        frozen = gc.get_freeze_count()
        kept = [Node() for _ in range(100)]
        gc.collect(0)
        assert gc.get_freeze_count() >= frozen + len(kept)
        assert not any(node is kept[0] for node in gc.get_objects(generation=1))  # no middle pass walks them
    finally:
        undo()


def test_the_refresh_frees_a_frozen_object_that_became_cyclic_garbage() -> None:
    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    gc.collect()
    gc.freeze()
    try:
        del a, b  # now garbage, but frozen: no collection looks at it
        gc.collect()
        assert gone() is not None

        async def one_refresh() -> None:
            task = asyncio.ensure_future(gc_policy.refresh_frozen(every=0))
            for _ in range(10_000):
                await asyncio.sleep(0)
                if gone() is None:
                    break
            task.cancel()

        asyncio.run(one_refresh())
        assert gone() is None
    finally:
        gc.unfreeze()
