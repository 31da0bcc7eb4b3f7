"""Executor against the real kernel: cgroup v1 cpuset ordering, cache, gone, rollback.

Every test makes its own koordlet-test-<uuid8> cgroups and removes them afterwards.
This machine has CPUs 0-1; v1 cpuset children start empty, so the sandbox copies
cpus/mems from the parent on creation.
"""
from __future__ import annotations

import errno

import pytest

from resourceexecutor import KeptFdFileIO, KernelFileIO, Outcome, ResourceExecutor
from system.cgroup_files import CgroupFiles
from system.errors import KernelRejected
from system.host import Host
from tests.resourceexecutor.conftest import RecordingIO
from tests.system.door import write_raw

pytestmark = pytest.mark.kernel


def cpus(box, cgroup_dir: str) -> str:
    return box.files.read_text("cpuset.cpus", cgroup_dir)


@pytest.fixture
def executor_for(clock):
    """Executors on the real host (default IO keeps fds open: closed at teardown)."""
    made: list[ResourceExecutor] = []

    def make(clock=clock, io=None) -> ResourceExecutor:
        executor = ResourceExecutor(CgroupFiles(Host()), clock=clock, io=io)
        made.append(executor)
        return executor

    yield make
    for executor in made:
        executor.close()


@pytest.fixture
def nested(cpuset_sandbox):
    """top (0-1) / parent / child, all holding CPUs 0-1."""
    box = cpuset_sandbox
    parent = box.make(box.dir("parent"))
    child = box.make(box.dir("parent", "child"))
    return box, parent, child


# ---------------------------------------------------------------- the kernel refuses naive orders

def test_naive_shrink_of_a_parent_under_a_busy_child_is_refused(nested):
    box, parent, child = nested
    write_raw(box.files, "cpuset.cpus", child, "1")
    with pytest.raises(KernelRejected) as refused:
        write_raw(box.files, "cpuset.cpus", parent, "0")  # parent first: child still uses CPU 1
    assert refused.value.errno == errno.EBUSY
    assert cpus(box, parent) == "0-1"


def test_naive_widening_of_a_child_beyond_its_parent_is_refused(nested):
    box, parent, child = nested
    write_raw(box.files, "cpuset.cpus", child, "0")
    write_raw(box.files, "cpuset.cpus", parent, "0")
    with pytest.raises(KernelRejected) as refused:
        write_raw(box.files, "cpuset.cpus", child, "0-1")  # child first: parent lacks CPU 1
    assert refused.value.errno == errno.EACCES


def test_wrongly_given_levels_fail_honestly(executor_for, nested, clock):
    box, parent, child = nested
    write_raw(box.files, "cpuset.cpus", child, "0")
    write_raw(box.files, "cpuset.cpus", parent, "0")
    executor = executor_for(clock)
    result = executor.update_levels([[executor.updater("cpuset.cpus", child, "1")],
                                     [executor.updater("cpuset.cpus", parent, "1")]])
    # child-as-top: its widening (pass one) gets EACCES, the parent's shrink (pass two,
    # before the child moved) gets EBUSY; the parent is left at the union
    assert not result.ok
    assert result[1].outcome is Outcome.FAILED
    assert isinstance(result[1].error, KernelRejected) and result[1].error.errno == errno.EBUSY
    assert cpus(box, parent) == "0-1"


# ---------------------------------------------------------------- the levelled order succeeds

def test_levelled_batch_shrinks_the_child_before_the_parent(executor_for, nested, clock):
    box, parent, child = nested
    write_raw(box.files, "cpuset.cpus", child, "1")
    io = RecordingIO()
    executor = executor_for(clock, io)
    result = executor.update_batch([executor.updater("cpuset.cpus", parent, "0"),
                                    executor.updater("cpuset.cpus", child, "0")])
    assert [r.outcome for r in result] == [Outcome.WRITTEN, Outcome.WRITTEN]
    assert (cpus(box, parent), cpus(box, child)) == ("0", "0")
    # pass one widened the child to the union, pass two shrank child then parent
    assert [(p.rsplit("/", 2)[-2], t) for p, t in io.writes] == [
        ("child", "0-1"), ("child", "0"), ("parent", "0")]


def test_levelled_batch_grows_the_parent_before_the_child(executor_for, nested, clock):
    box, parent, child = nested
    write_raw(box.files, "cpuset.cpus", child, "0")
    write_raw(box.files, "cpuset.cpus", parent, "0")
    io = RecordingIO()
    executor = executor_for(clock, io)
    result = executor.update_batch([executor.updater("cpuset.cpus", child, "1"),   # child first
                                    executor.updater("cpuset.cpus", parent, "0-1")])
    assert result.ok and (cpus(box, parent), cpus(box, child)) == ("0-1", "1")
    assert [(p.rsplit("/", 2)[-2], t) for p, t in io.writes] == [
        ("parent", "0-1"), ("child", "0-1"), ("child", "1")]


def test_levelled_batch_moves_a_three_level_tree_across_cpus(executor_for, cpuset_sandbox,
                                                             clock):
    box = cpuset_sandbox
    dirs = [box.make(box.dir("q")), box.make(box.dir("q", "pod")),
            box.make(box.dir("q", "pod", "c1")), box.make(box.dir("q", "pod", "c2"))]
    for d in reversed(dirs):
        write_raw(box.files, "cpuset.cpus", d, "0")
    for d in dirs[1:]:
        write_raw(box.files, "cpuset.cpus", d, "0")
    executor = executor_for(clock)
    wanted = {dirs[0]: "1", dirs[1]: "1", dirs[2]: "1", dirs[3]: "1"}
    result = executor.update_batch([executor.updater("cpuset.cpus", d, v)
                                    for d, v in reversed(list(wanted.items()))])
    assert result.ok, list(result)
    assert {d: cpus(box, d) for d in dirs} == wanted


def test_v1_cfs_quota_grows_parent_first(executor_for, cpu_memory_sandbox, clock):
    box = cpu_memory_sandbox
    parent = box.make(box.dir("p"))
    child = box.make(box.dir("p", "c"))
    write_raw(box.files, "cpu.cfs_quota_us", parent, 50_000)
    write_raw(box.files, "cpu.cfs_quota_us", child, 50_000)
    with pytest.raises(KernelRejected):
        write_raw(box.files, "cpu.cfs_quota_us", child, 100_000)  # naive: child above parent
    executor = executor_for(clock)
    result = executor.update_batch([executor.updater("cpu.cfs_quota_us", child, 100_000),
                                    executor.updater("cpu.cfs_quota_us", parent, 100_000)])
    assert result.ok
    assert box.files.read("cpu.cfs_quota_us", child) == 100_000


# ---------------------------------------------------------------- cache, gone, rollback

@pytest.mark.parametrize("inner", [KernelFileIO, KeptFdFileIO])
def test_second_identical_batch_writes_nothing_and_drift_is_repaired(executor_for,
                                                                     cpu_memory_sandbox,
                                                                     clock, inner):
    box = cpu_memory_sandbox
    dirs = [box.make(box.dir("c%d" % i)) for i in range(3)]
    io = RecordingIO(inner())
    executor = executor_for(clock, io)
    batch = [executor.updater(name, d, value) for d in dirs
             for name, value in (("cpu.shares", 512), ("cpu.cfs_quota_us", 30_000),
                                 ("memory.limit_in_bytes", 256 << 20))]
    assert executor.update_batch(batch).counts() == {Outcome.WRITTEN: 9}
    writes, reads = len(io.writes), len(io.reads)
    assert executor.update_batch(batch).counts() == {Outcome.SKIPPED: 9}
    assert (len(io.writes), len(io.reads)) == (writes, reads)

    write_raw(box.files, "cpu.shares", dirs[0], 4096)  # changed behind our back
    clock.advance(30)
    executor.update_batch(batch)
    assert box.files.read("cpu.shares", dirs[0]) == 4096  # trusted the cache inside the TTL
    clock.advance(31)
    result = executor.update_batch(batch)
    assert result.counts() == {Outcome.WRITTEN: 1, Outcome.SKIPPED: 8}
    assert box.files.read("cpu.shares", dirs[0]) == 512


@pytest.mark.parametrize("inner", [KernelFileIO, KeptFdFileIO])
def test_cgroup_removed_mid_batch_is_gone_and_the_rest_lands(executor_for, cpu_memory_sandbox,
                                                             clock, inner):
    box = cpu_memory_sandbox
    dirs = [box.make(box.dir("c%d" % i)) for i in range(3)]
    io = RecordingIO(inner())
    prime = executor_for(io=io)  # with kept fds: the files of c1 are open when it goes
    prime.update_batch([prime.updater("cpu.shares", d, 128) for d in dirs])

    def remove_middle_once(path, text):
        io.before_write = None
        box.remove(dirs[1])

    io.before_write = remove_middle_once
    executor = executor_for(clock, io)
    batch = [executor.updater(name, d, value) for d in dirs
             for name, value in (("cpu.shares", 256), ("memory.limit_in_bytes", 128 << 20))]
    result = executor.update_batch(batch)
    assert [r.outcome for r in result] == [Outcome.WRITTEN, Outcome.WRITTEN,
                                           Outcome.GONE, Outcome.GONE,
                                           Outcome.WRITTEN, Outcome.WRITTEN]
    assert result.ok
    assert box.files.read("cpu.shares", dirs[2]) == 256


def test_rollback_restores_cpusets_when_the_kernel_refuses_one(executor_for, nested, clock):
    box, parent, child = nested
    sibling = box.make(box.dir("parent", "sibling"))
    write_raw(box.files, "cpuset.cpus", child, "0")
    executor = executor_for(clock)
    result = executor.update_batch([executor.updater("cpuset.cpus", child, "1"),
                                    executor.updater("cpuset.cpus", sibling, "0-7")],  # no CPU 2-7
                                   rollback=True)
    assert result[0].outcome is Outcome.WRITTEN and result[1].outcome is Outcome.FAILED
    assert result.rolled_back and result.rollback_failures == ()
    assert (cpus(box, child), cpus(box, sibling)) == ("0", "0-1")


def test_unaligned_memory_limit_is_verified_not_rewritten(executor_for, cpu_memory_sandbox,
                                                          clock):
    box = cpu_memory_sandbox
    cgroup = box.make(box.dir("c"))
    io = RecordingIO(KeptFdFileIO())
    executor = executor_for(io=io)
    updater = executor.updater("memory.limit_in_bytes", cgroup, 1_000_000)  # not page aligned
    assert executor.update(updater).outcome is Outcome.WRITTEN
    assert box.files.read("memory.limit_in_bytes", cgroup) == 999_424  # the kernel rounded
    clock.advance(61)
    assert executor.update(updater).outcome is Outcome.SKIPPED  # re-verified: it holds ours
    assert len(io.writes) == 1
