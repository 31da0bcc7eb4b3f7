"""settle_heap: what exists at the call is out of later collections; what comes after is not."""

from __future__ import annotations

import gc

from koordlet.util.heap import keep_heap_settled, settle_heap


def test_settled_objects_leave_the_collected_generations_and_new_cycles_are_still_collected() -> None:
    kept = {"a": [1, 2]}
    try:
        frozen = settle_heap()
        assert frozen == gc.get_freeze_count() > 0
        assert not any(obj is kept for obj in gc.get_objects())  # frozen: no generation lists it
        cycle: list = []
        cycle.append(cycle)
        assert any(obj is cycle for obj in gc.get_objects(generation=0))
        del cycle
        assert gc.collect() >= 1  # the cycle made after settling is found and freed
    finally:
        gc.unfreeze()
    assert any(obj is kept for obj in gc.get_objects())


def test_kept_settled_each_full_collection_freezes_its_survivors() -> None:
    stop = keep_heap_settled()
    try:
        gc.unfreeze()
        survivor = {"b": [3]}
        gc.collect(1)  # not a full collection: nothing frozen
        assert gc.get_freeze_count() == 0
        gc.collect()
        assert gc.get_freeze_count() > 0
        assert not any(obj is survivor for obj in gc.get_objects())
    finally:
        stop()
        gc.unfreeze()
    gc.collect()
    assert gc.get_freeze_count() == 0  # stopped: a full collection freezes nothing more
