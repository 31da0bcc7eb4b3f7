"""The executor against a model of the v1 cpuset kernel rules, on random trees.

The model refuses what the kernel refuses (a child CPU outside the parent: EACCES;
a parent dropping a CPU a child holds: EBUSY), so any wrong order shows up as FAILED.
"""
from __future__ import annotations

import errno
import os

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from resourceexecutor import Outcome, ResourceExecutor
from system.cgroup_files import CgroupFiles
from system.cpuset import format_cpuset, parse_cpuset
from system.errors import KernelRejected
from tests.resourceexecutor.conftest import FakeClock

CPUS = frozenset(range(4))


class CpusetKernelModel:
    """cpuset.cpus files by path, with the v1 hierarchy rules."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.cpus: dict[str, frozenset[int]] = {}
        self.writes = 0

    def _dir(self, path: str) -> str:
        return os.path.dirname(path)

    def read(self, path: str) -> str:
        return format_cpuset(self.cpus[self._dir(path)])

    def read_many(self, paths):
        return [self.read(path) for path in paths]

    def write(self, path: str, text: str) -> None:
        here, wanted = self._dir(path), parse_cpuset(text)
        parent = os.path.dirname(here)
        allowed = self.cpus.get(parent, CPUS)
        if not wanted <= allowed:
            raise KernelRejected("outside parent", path, errno=errno.EACCES)
        for other, held in self.cpus.items():
            if os.path.dirname(other) == here and not held <= wanted:
                raise KernelRejected("child holds more", path, errno=errno.EBUSY)
        self.cpus[here] = wanted
        self.writes += 1

    def release(self, path_prefix: str) -> int:
        return 0

    def sweep(self) -> int:
        return 0

    def close(self) -> None:
        return None


@st.composite
def transitions(draw):
    count = draw(st.integers(1, 7))
    parents: list[int | None] = [None] + [draw(st.integers(0, n - 1)) for n in range(1, count)]

    def state():
        out: list[frozenset[int]] = []
        for node in range(count):
            allowed = CPUS if parents[node] is None else out[parents[node]]
            out.append(frozenset(draw(st.sets(st.sampled_from(sorted(allowed)))))
                       if allowed else frozenset())
        return out

    return parents, [state() for _ in range(3)], draw(st.permutations(range(count)))


def _dir(node, parents):
    parts = []
    while node is not None:
        parts.append("n%d" % node)
        node = parents[node]
    return "/".join(reversed(parts))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=transitions())
def test_levelled_batches_move_any_valid_tree_to_any_other(v1_host, case):
    parents, states, order = case
    files = CgroupFiles(v1_host)
    root = str(files.dir_path("cpuset.cpus", ""))
    model = CpusetKernelModel(root)
    dirs = [_dir(n, parents) for n in range(len(parents))]
    for node in sorted(range(len(dirs)), key=lambda n: dirs[n].count("/")):
        model.cpus[root + "/" + dirs[node]] = states[0][node]
    clock = FakeClock()
    executor = ResourceExecutor(files, clock=clock, io=model)
    for wanted in states[1:]:
        batch = [executor.updater("cpuset.cpus", dirs[n], wanted[n]) for n in order]
        result = executor.update_batch(batch)
        assert result.ok, [(r.updater.cgroup_dir, r.outcome, r.error) for r in result]
        assert {d: model.cpus[root + "/" + d] for d in dirs} == dict(zip(dirs, wanted))
        writes = model.writes
        again = executor.update_batch(batch)
        assert again.counts() == {Outcome.SKIPPED: len(batch)} and model.writes == writes
        clock.advance(5)


class PoisonedModel(CpusetKernelModel):
    """The model, plus one cgroup whose every write the kernel refuses."""

    def __init__(self, root: str, poisoned: str) -> None:
        super().__init__(root)
        self.poisoned = poisoned

    def write(self, path: str, text: str) -> None:
        if os.path.dirname(path) == self.poisoned:
            raise KernelRejected("refused", path, errno=errno.EINVAL)
        super().write(path, text)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=transitions(), data=st.data())
def test_rollback_returns_any_tree_to_where_it_was(v1_host, case, data):
    parents, states, order = case
    files = CgroupFiles(v1_host)
    root = str(files.dir_path("cpuset.cpus", ""))
    dirs = [_dir(n, parents) for n in range(len(parents))]
    poisoned = data.draw(st.sampled_from(dirs))
    model = PoisonedModel(root, root + "/" + poisoned)
    for node in range(len(dirs)):
        model.cpus[root + "/" + dirs[node]] = states[0][node]
    executor = ResourceExecutor(files, clock=FakeClock(), io=model)
    batch = [executor.updater("cpuset.cpus", dirs[n], states[1][n]) for n in order]
    result = executor.update_batch(batch, rollback=True)
    assert result.rollback_failures == ()
    # the poisoned cgroup fails the batch only if it had to change; then all goes back
    refused = states[1][dirs.index(poisoned)] != states[0][dirs.index(poisoned)]
    expected = states[0] if refused else states[1]
    assert {d: model.cpus[root + "/" + d] for d in dirs} == dict(zip(dirs, expected))
    assert result.ok is not refused
    assert result.rolled_back == (refused and result.writes > 0)
