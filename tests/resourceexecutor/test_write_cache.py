"""The write cache: skip repeats while fresh, look again once stale, forget when old."""
from __future__ import annotations

from dataclasses import dataclass

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from resourceexecutor.dir_index import DirIndex
from resourceexecutor.write_cache import CacheEntry, CachePolicy, Decision, WriteCache, decide


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Want:
    key: tuple[str, str]
    text: str | None


def test_no_entry_means_look_first():
    assert decide(None, "5", 0.0, 60.0) is Decision.LOOK_FIRST


def test_fresh_same_text_is_skipped_and_fresh_other_text_is_written():
    entry = CacheEntry("5", 5, at=100.0)
    assert decide(entry, "5", 159.9, 60.0) is Decision.SKIP
    assert decide(entry, "6", 159.9, 60.0) is Decision.WRITE


def test_stale_entry_is_looked_at_again():
    entry = CacheEntry("5", 5, at=100.0)
    assert decide(entry, "5", 160.1, 60.0) is Decision.LOOK_FIRST


def test_unformattable_wanted_value_is_never_skipped():
    assert decide(CacheEntry("5", 5, 0.0), None, 1.0, 60.0) is Decision.WRITE


@settings(max_examples=200, deadline=None)
@given(
    entries=st.dictionaries(st.sampled_from("abcdef"),
                            st.tuples(st.sampled_from(["1", "2"]), st.floats(0, 200))),
    wants=st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from(["1", "2", None]))),
    now=st.floats(0, 300),
)
def test_batch_misses_agree_with_the_single_decision(entries, wants, now):
    cache = WriteCache(CachePolicy(force_update_after=60.0), clock=FakeClock())
    for key, (text, at) in entries.items():
        cache.remember((key, ""), text, int(text), at)
    updaters = [Want((key, ""), text) for key, text in wants]
    misses = cache.misses(updaters, now)
    expected = [i for i, u in enumerate(updaters)
                if cache.decide(u.key, u.text, now) is not Decision.SKIP]
    assert misses == expected


def test_sweep_forgets_old_entries_only_when_due():
    clock = FakeClock(0.0)
    cache = WriteCache(CachePolicy(force_update_after=60, expire_after=120, sweep_every=60),
                       clock=clock)
    cache.remember(("cpu.shares", "a"), "2", 2, 0.0)
    cache.remember(("cpu.shares", "b"), "2", 2, 100.0)
    assert cache.sweep_if_due(59.0) is None
    assert cache.sweep_if_due(130.0) == 1
    assert cache.get(("cpu.shares", "a")) is None
    assert cache.get(("cpu.shares", "b")) is not None
    assert cache.sweep_if_due(150.0) is None  # not due again yet


def test_entries_are_dated_again_only_while_each_is_still_the_one_seen():
    cache = WriteCache(clock=FakeClock())
    keys = [("cpu.shares", "a"), ("cpu.shares", "b")]
    cache.remember(keys[0], "2", 2, 0.0)
    cache.remember(keys[1], "0-1", frozenset({0, 1}), 0.0)
    seen = [cache.get(key) for key in keys]
    fresh = cache.date_again(keys, seen, 10.0)
    assert fresh == [("2", 2, 10.0), ("0-1", frozenset({0, 1}), 10.0)] and [cache.get(key) for key in keys] == fresh
    cache.remember(keys[1], "0-2", frozenset({0, 1, 2}), 11.0)  # written since it was seen
    assert cache.date_again(keys, fresh, 20.0) is None
    assert cache.get(keys[0]) == ("2", 2, 10.0)  # nothing dated
    cache.forget(keys[0])
    assert cache.date_again(keys[:1], fresh[:1], 20.0) is None and cache.get(keys[0]) is None


def test_forget_where_drops_matching_keys():
    cache = WriteCache(clock=FakeClock())
    cache.remember(("cpu.shares", "pod1/c1"), "2", 2, 0.0)
    cache.remember(("cpu.shares", "pod2/c1"), "2", 2, 0.0)
    assert cache.forget_where(lambda key: key[1].startswith("pod1")) == 1
    assert len(cache) == 1


def _under(top: str, cgroup_dir: str) -> bool:
    return top == "" or cgroup_dir == top or cgroup_dir.startswith(top + "/")


def test_forget_cgroup_removes_exactly_that_cgroup_and_those_below():
    cache = WriteCache(clock=FakeClock())
    kept = [("cpu.shares", "kubepods/pod1x/c1"), ("cpu.shares", "kubepods/pod1"),
            ("cpuset.cpus", "kubepods"), ("cpu.shares", "kubepods/pod2/c1")]
    doomed = [("cpu.shares", "kubepods/pod1/c1"), ("cpu.cfs_quota_us", "kubepods/pod1/c1"),
              ("cpu.shares", "kubepods/pod1/c1/inner")]
    for key in kept + doomed:
        cache.remember(key, "2", 2, 0.0)
    assert sorted(cache.forget_cgroup("/kubepods/pod1/c1/")) == sorted(doomed)
    assert sorted(cache.entries) == sorted(kept)
    assert cache.forget_cgroup("kubepods/pod1/c1") == []


def test_the_dir_index_holds_a_tuple_of_keys_a_directory_and_nothing_per_parent():
    index = DirIndex()
    pod1, pod2 = ("cpu.shares", "kubepods/pod1/c1"), ("cpu.shares", "/kubepods/pod2/c1/")
    for key in (pod1, ("cpu.cfs_quota_us", "kubepods/pod1/c1"), pod2, pod1):
        index.add(key)
    held = {name: getattr(index, name) for name in DirIndex.__slots__}
    assert held == {"_keys": {"kubepods/pod1/c1": (pod1, ("cpu.cfs_quota_us", "kubepods/pod1/c1")),
                              "kubepods/pod2/c1": (pod2,)},
                    "_dirs": ["kubepods/pod1/c1", "kubepods/pod2/c1"]}
    assert sorted(index.pop_under("kubepods")) == sorted([pod1, ("cpu.cfs_quota_us", "kubepods/pod1/c1"), pod2])
    assert held == {"_keys": {}, "_dirs": []}


_DIRS = ["", "a", "a/b", "a/b/c", "a/bc", "a/b-c", "a/b.c/d", "a/b/d", "e", "e/a"]


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["remember", "forget", "forget_cgroup", "sweep"]),
                                st.sampled_from(["cpu.shares", "memory.max"]),
                                st.sampled_from(_DIRS), st.floats(0, 300)), max_size=40))
def test_forget_cgroup_agrees_with_a_scan_of_the_cache(steps):
    cache = WriteCache(CachePolicy(expire_after=120, sweep_every=0), clock=FakeClock())
    for op, name, cgroup_dir, at in steps:
        if op == "remember":
            cache.remember((name, cgroup_dir), "1", 1, at)
        elif op == "forget":
            cache.forget((name, cgroup_dir))
        elif op == "sweep":
            cache.sweep_if_due(at)
        else:
            expected = {key for key in cache.entries if _under(cgroup_dir, key[1])}
            assert set(cache.forget_cgroup(cgroup_dir)) == expected
            assert not any(_under(cgroup_dir, key[1]) for key in cache.entries)
    for cgroup_dir in _DIRS:  # the index still covers what is left
        expected = {key for key in cache.entries if _under(cgroup_dir, key[1])}
        assert set(cache.forget_cgroup(cgroup_dir)) == expected
    assert len(cache) == 0 and cache._dirs._keys == {} and cache._dirs._dirs == []


def test_negative_durations_are_refused():
    with pytest.raises(ValueError):
        CachePolicy(force_update_after=-1)
