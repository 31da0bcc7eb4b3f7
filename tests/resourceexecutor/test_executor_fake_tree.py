"""Executor behaviour on fake cgroup trees (v2 files this machine lacks, cache, order)."""
from __future__ import annotations

import asyncio
import gc
import shutil
import threading

import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from resourceexecutor import Outcome, ResourceExecutor
from resourceexecutor.write_cache import CachePolicy
from system.cgroup_files import CgroupFiles
from system.errors import InvalidValue, KernelRejected, NotSupported
from tests.resourceexecutor.conftest import FakeTreeIO, RecordingIO

C1 = "kubepods/pod1/c1"
C2 = "kubepods/pod1/c2"
POD = "kubepods/pod1"


def read(host, cgroup_dir: str, name: str) -> str:
    return (host.cgroup_root / cgroup_dir / name).read_text().strip()


@pytest.fixture
def v2(v2_host, clock):
    io = RecordingIO(FakeTreeIO())
    return ResourceExecutor(CgroupFiles(v2_host), clock=clock, io=io), io, v2_host


# ---------------------------------------------------------------- v2 files

def test_v2_shares_become_kubelet_weight(v2):
    executor, _, host = v2
    result = executor.update(executor.updater("cpu.shares", C1, 1024))
    assert result.outcome is Outcome.WRITTEN
    assert read(host, C1, "cpu.weight") == "39"


def test_v2_quota_lands_in_cpu_max_and_keeps_the_period(v2):
    executor, _, host = v2
    executor.update(executor.updater("cpu.cfs_quota_us", C1, 50_000))
    assert read(host, C1, "cpu.max") == "50000 100000"
    executor.update(executor.updater("cpu.cfs_quota_us", C1, -1))
    assert read(host, C1, "cpu.max") == "max 100000"


def test_v2_period_keeps_the_quota_and_is_cached(v2):
    executor, io, host = v2
    batch = [executor.updater("cpu.cfs_quota_us", C1, 50_000),
             executor.updater("cpu.cfs_period_us", C1, 200_000)]
    assert [r.outcome for r in executor.update_batch(batch)] == [Outcome.WRITTEN] * 2
    assert read(host, C1, "cpu.max") == "50000 200000"
    writes = len(io.writes)
    again = executor.update_batch(batch)
    assert again.counts()[Outcome.SKIPPED] == 2 and len(io.writes) == writes


def test_v2_memory_high_unlimited_is_max(v2):
    executor, _, host = v2
    executor.update(executor.updater("memory.high", C1, 512 << 20))
    assert read(host, C1, "memory.high") == str(512 << 20)
    executor.update(executor.updater("memory.high", C1, -1))
    assert read(host, C1, "memory.high") == "max"


# ---------------------------------------------------------------- cache

def test_second_identical_batch_issues_no_syscalls(v2):
    executor, io, _ = v2
    batch = [executor.updater(name, d, value) for d in (C1, C2)
             for name, value in (("cpu.shares", 512), ("memory.high", 1 << 30),
                                 ("cpu.cfs_quota_us", 20_000))]
    first = executor.update_batch(batch)
    assert first.counts()[Outcome.WRITTEN] == 6
    reads, writes = len(io.reads), len(io.writes)
    second = executor.update_batch(batch)
    assert second.counts() == {Outcome.SKIPPED: 6}
    assert (len(io.reads), len(io.writes)) == (reads, writes)


def test_a_batch_reads_the_files_the_cache_cannot_vouch_for_in_one_call(v1_host, clock):
    """Several files to read (first sight, past the force-update window, or every one
    without the cache) are read in one batch call, past the kept-fd pool; what the cache
    vouches for is not read, and a lone file is read by itself."""
    io = SplitIO(FakeTreeIO())
    executor = ResourceExecutor(CgroupFiles(v1_host), clock=clock, io=io)
    batch = [executor.updater("cpu.shares", C1, 512), executor.updater("cpu.shares", C2, 256)]
    assert [r.outcome for r in executor.update_batch(batch)] == [Outcome.WRITTEN] * 2
    assert io.batches == [[u.path for u in batch]] and io.one_by_one == []
    executor.update_batch(batch)
    assert len(io.batches) == 1 and io.one_by_one == []  # the cache vouches for both
    executor.update_batch(batch, use_cache=False)
    assert io.batches[-1] == [u.path for u in batch] and io.one_by_one == []
    clock.advance(61)  # past the force-update window: each must be looked at again
    executor.update_batch(batch)
    assert io.batches[-1] == [u.path for u in batch] and len(io.batches) == 3 and io.one_by_one == []
    clock.advance(61)
    executor.update_batch(batch[:1])
    assert len(io.batches) == 3 and io.one_by_one == [batch[0].path]


def test_apply_batch_runs_in_the_io_thread_and_owns_the_executor(v2):
    """The async methods run the batch in the executor's one IO thread, queued in order
    behind each other (forget_cgroup_soon too); once that thread exists, a synchronous
    batch from another thread is refused instead of racing it over the cache."""
    executor, io, host = v2
    threads: list[int] = []
    write = io.write

    def noting_write(path: str, text: str) -> None:
        threads.append(threading.get_ident())
        write(path, text)

    io.write = noting_write  # type: ignore[method-assign]

    async def scenario() -> tuple[int, Outcome, list[int]]:
        updater = executor.updater("cpu.shares", C1, 512)
        result = await executor.apply_batch([updater])
        reads = [len(io.reads)]
        await executor.apply_batch([updater])  # the cache vouches for it: not read
        reads.append(len(io.reads))
        executor.forget_cgroup_soon(POD)
        await executor.apply_levels([[updater]])  # queued after the forget: read and compared again
        reads.append(len(io.reads))
        return threading.get_ident(), result.outcomes[0], reads

    loop_thread, outcome, reads = asyncio.run(scenario())
    assert outcome is Outcome.WRITTEN and read(host, C1, "cpu.weight") == "20"
    assert threads and loop_thread not in threads and len(set(threads)) == 1
    assert reads[1] == reads[0] and reads[2] == reads[1] + 1
    with pytest.raises(RuntimeError, match="IO thread"):
        executor.update_batch([executor.updater("cpu.shares", C2, 256)])
    asyncio.run(executor.aclose())
    assert executor.update_batch([executor.updater("cpu.shares", C2, 256)]).outcomes == [Outcome.WRITTEN]


def test_first_sight_of_an_equal_value_writes_nothing(v2):
    executor, io, _ = v2
    result = executor.update(executor.updater("memory.high", C1, -1))  # fake default is "max"
    assert result.outcome is Outcome.SKIPPED
    assert io.writes == [] and len(io.reads) == 1


def test_drift_is_repaired_only_after_the_force_update_interval(v2, clock):
    executor, io, host = v2
    updater = executor.updater("cpu.shares", C1, 512)
    executor.update(updater)
    (host.cgroup_root / C1 / "cpu.weight").write_text("100")  # someone else's write
    clock.advance(59)
    assert executor.update(updater).outcome is Outcome.SKIPPED
    assert read(host, C1, "cpu.weight") == "100"
    clock.advance(2)
    assert executor.update(updater).outcome is Outcome.WRITTEN
    assert read(host, C1, "cpu.weight") == "20"


def test_stale_entry_with_unchanged_file_is_verified_not_rewritten(v2, clock):
    executor, io, _ = v2
    updater = executor.updater("cpu.shares", C1, 512)
    executor.update(updater)
    writes = len(io.writes)
    clock.advance(61)
    assert executor.update(updater).outcome is Outcome.SKIPPED
    assert len(io.writes) == writes


def test_old_entries_are_forgotten(v2_host, clock):
    policy = CachePolicy(force_update_after=60, expire_after=120, sweep_every=60)
    executor = ResourceExecutor(CgroupFiles(v2_host), clock=clock, policy=policy, io=FakeTreeIO())
    executor.update(executor.updater("cpu.shares", C1, 512))
    assert len(executor.cache) == 1
    clock.advance(121)
    executor.update_batch([])
    assert len(executor.cache) == 0


def test_forget_cgroup_drops_its_entries_and_those_below(v2):
    executor, _, _ = v2
    executor.update_batch([executor.updater("cpu.shares", d, 512) for d in (POD, C1, "kubepods")])
    assert executor.forget_cgroup(POD) == 2
    assert len(executor.cache) == 1
    assert executor.cache.get(("cpu.shares", "kubepods")) is not None


# ---------------------------------------------------------------- levelled order

def test_memory_protection_grows_top_down_and_shrinks_bottom_up_on_v2(v2):
    executor, io, host = v2
    tree = ("kubepods", POD, C1)
    grow = [executor.updater("memory.min", d, 300 << 20) for d in reversed(tree)]  # child first
    executor.update_batch(grow)
    grow_order = [path for path, _ in io.writes]
    assert grow_order == [str(host.cgroup_root / d / "memory.min") for d in tree]

    io.writes.clear()
    shrink = [executor.updater("memory.min", d, 100 << 20) for d in tree]  # parent first
    executor.update_batch(shrink)
    shrink_order = [path for path, _ in io.writes]
    assert shrink_order == [str(host.cgroup_root / d / "memory.min") for d in reversed(tree)]
    assert all(read(host, d, "memory.min") == str(100 << 20) for d in tree)


def test_mixed_move_writes_the_larger_value_first(v2):
    executor, io, host = v2
    executor.update_batch([executor.updater("memory.low", POD, 200),
                           executor.updater("memory.low", C1, 100)])
    io.writes.clear()
    # parent shrinks to 150 while the child grows to 150: parent keeps 200 until the child moved
    executor.update_batch([executor.updater("memory.low", POD, 150),
                           executor.updater("memory.low", C1, 150)])
    assert [(p.rsplit("/", 2)[-2], t) for p, t in io.writes] == [("c1", "150"), ("pod1", "150")]


def test_explicit_levels_are_honoured(v2):
    executor, io, host = v2
    result = executor.update_levels([[executor.updater("cpuset.cpus", "kubepods", "0-1")],
                                     [executor.updater("cpuset.cpus", POD, "0-1"),
                                      executor.updater("cpu.shares", POD, 256)],
                                     [executor.updater("cpuset.cpus", C1, "1")]])
    assert [r.outcome for r in result] == [Outcome.WRITTEN] * 4
    order = [(p.split("/sys/fs/cgroup/")[1], t) for p, t in io.writes]
    assert order == [("kubepods/cpuset.cpus", "0-1"), ("kubepods/pod1/cpuset.cpus", "0-1"),
                     ("kubepods/pod1/cpu.weight", "10"), ("kubepods/pod1/c1/cpuset.cpus", "1")]


def test_cfs_quota_is_levelled_on_v1_only(v1_host, v2_host):
    on_v1 = ResourceExecutor(CgroupFiles(v1_host)).updater("cpu.cfs_quota_us", C1, 1000)
    on_v2 = ResourceExecutor(CgroupFiles(v2_host)).updater("cpu.cfs_quota_us", C1, 1000)
    assert on_v1.merge is not None and on_v2.merge is None


# ---------------------------------------------------------------- honest failures

def test_invalid_value_is_reported_and_the_rest_lands(v2):
    executor, io, host = v2
    result = executor.update_batch([executor.updater("cpu.shares", C1, 1),
                                    executor.updater("cpu.shares", C2, 512)])
    assert result[0].outcome is Outcome.INVALID and result[0].error is not None
    assert result[1].outcome is Outcome.WRITTEN
    assert not result.ok
    assert [p for p, _ in io.writes] == [str(host.cgroup_root / C2 / "cpu.weight")]


def test_strict_factory_raises_and_unknown_resource_raises(v2):
    executor, _, _ = v2
    with pytest.raises(InvalidValue):
        executor.updater("cpu.shares", C1, 1, strict=True)
    with pytest.raises(NotSupported):
        executor.updater("cpu.no_such_file", C1, 1)


def test_removed_cgroup_is_gone_and_the_rest_lands(v2):
    executor, _, host = v2
    batch = [executor.updater("cpu.shares", d, 512) for d in (C1, C2)]
    shutil.rmtree(host.cgroup_root / C1)
    with capture_logs() as logs:
        result = executor.update_batch(batch)
    assert [r.outcome for r in result] == [Outcome.GONE, Outcome.WRITTEN]
    assert result.ok
    assert [entry["log_level"] for entry in logs] == ["debug"]


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_gone_cgroup_leaves_no_garbage_cycle_behind(v2, use_cache):
    # the daemon freezes what survives each collection: a cycle made by a batch would
    # hold its updaters until the hourly full pass
    executor, _, host = v2
    batch = [executor.updater("cpu.shares", d, 512) for d in (C1, C2)]
    executor.update_batch(batch)  # the cache knows both files
    shutil.rmtree(host.cgroup_root / C1)
    gc.collect()
    gc.disable()
    try:
        result = executor.update_batch([executor.updater("cpu.shares", d, 256) for d in (C1, C2)],
                                       use_cache=use_cache)
        assert [r.outcome for r in result] == [Outcome.GONE, Outcome.WRITTEN]
        assert "gone" in str(result.errors[0])  # the error is kept, for the logs
        del result
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_unsupported_resource_is_logged_once_and_not_retried(v1_host, clock):
    io = RecordingIO(FakeTreeIO())
    executor = ResourceExecutor(CgroupFiles(v1_host), clock=clock, io=io)
    batch = [executor.updater("memory.min", d, 1 << 20) for d in (C1, C2)]  # not Anolis
    with capture_logs() as logs:
        first = executor.update_batch(batch)
        reads = len(io.reads)
        second = executor.update_batch(batch)
    assert first.counts() == second.counts() == {Outcome.NOT_SUPPORTED: 2}
    assert [e["event"] for e in logs] == ["cgroup_resource_unsupported"]
    assert len(io.reads) == reads


def test_forget_cgroup_drops_the_not_supported_notes_of_that_cgroup_only(v1_host, clock):
    io = RecordingIO(FakeTreeIO())
    executor = ResourceExecutor(CgroupFiles(v1_host), clock=clock, io=io)
    batch = [executor.updater("memory.min", d, 1 << 20) for d in (C1, C2)]
    executor.update_batch(batch)
    reads = len(io.reads)
    executor.forget_cgroup(C1)
    executor.update_batch(batch)
    assert len(io.reads) == reads + 1  # C1 is looked at afresh, C2 still known absent


def test_kernel_refusal_is_failed_with_the_error(v2):
    executor, io, _ = v2

    def refuse(path, text):
        if path.endswith("c1/cpu.weight"):
            raise KernelRejected("kernel refused the operation", path, errno=16)

    io.before_write = refuse
    result = executor.update_batch([executor.updater("cpu.shares", d, 512) for d in (C1, C2)])
    assert result[0].outcome is Outcome.FAILED
    assert isinstance(result[0].error, KernelRejected) and result[0].error.errno == 16
    assert result[1].outcome is Outcome.WRITTEN


def test_rollback_restores_what_was_there_before(v2):
    executor, io, host = v2
    executor.update_batch([executor.updater("cpu.shares", C2, 2048)])
    before = {d: read(host, d, "cpu.weight") for d in (C1, C2, POD)}

    def refuse(path, text):
        if path.endswith("pod1/cpu.weight"):
            raise KernelRejected("kernel refused the operation", path, errno=22)

    io.before_write = refuse
    result = executor.update_batch([executor.updater("cpu.shares", d, 512) for d in (C1, C2, POD)],
                                   rollback=True)
    assert result.rolled_back and result.rollback_failures == ()
    assert [r.outcome for r in result] == [Outcome.WRITTEN, Outcome.WRITTEN, Outcome.FAILED]
    assert {d: read(host, d, "cpu.weight") for d in (C1, C2, POD)} == before
    io.before_write = None
    again = executor.update_batch([executor.updater("cpu.shares", C1, 512)])
    assert again[0].outcome is Outcome.WRITTEN  # the cache did not keep the undone value


# ---------------------------------------------------------------- metrics

def test_metrics_count_results_per_resource_and_time_batches(v2_host, clock):
    registry = CollectorRegistry()
    executor = ResourceExecutor(CgroupFiles(v2_host), clock=clock, registry=registry,
                                io=FakeTreeIO())
    batch = [executor.updater("cpu.shares", d, 512) for d in (C1, C2)]
    batch.append(executor.updater("cpu.shares", C1, 1))
    executor.update_batch(batch)
    executor.update_batch(batch)

    def total(result):
        return registry.get_sample_value("koordlet_resource_update_total",
                                         {"resource": "cpu.shares", "result": result})

    assert total("written") == 2
    assert total("skipped") == 2
    assert total("invalid") == 2
    assert registry.get_sample_value("koordlet_resource_update_batch_duration_seconds_count") == 2


def test_resource_without_a_file_on_this_version_is_not_supported_and_logged_once(v2):
    executor, io, _ = v2
    batch = [executor.updater("memory.soft_limit_in_bytes", d, 1 << 20) for d in (C1, C2)]
    with capture_logs() as logs:
        result = executor.update_batch(batch)
        executor.update_batch(batch)
    assert result.counts() == {Outcome.NOT_SUPPORTED: 2}
    assert isinstance(result[0].error, NotSupported)
    assert [e["event"] for e in logs] == ["cgroup_resource_unsupported"]
    assert io.reads == [] and io.writes == []


def test_without_the_cache_the_file_is_compared_and_repaired_at_once(v2):
    executor, io, host = v2
    updater = executor.updater("memory.high", C1, 1 << 30)
    executor.update(updater)
    (host.cgroup_root / C1 / "memory.high").write_text("max")
    assert executor.update(updater).outcome is Outcome.SKIPPED       # trusts the cache
    assert executor.update(updater, use_cache=False).outcome is Outcome.WRITTEN
    assert read(host, C1, "memory.high") == str(1 << 30)
    reads = len(io.reads)
    assert executor.update(updater, use_cache=False).outcome is Outcome.SKIPPED
    assert len(io.reads) == reads + 1


class SplitIO(RecordingIO):
    """Tells one-file reads from batched ones."""

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.one_by_one: list[str] = []
        self.batches: list[list[str]] = []

    def read(self, path: str) -> str:
        self.one_by_one.append(path)
        return super().read(path)

    def read_many(self, paths):
        self.batches.append(list(paths))
        return super().read_many(paths)


def test_a_pass_without_the_cache_reads_its_files_in_one_call_and_repairs_what_drifted(v1_host, clock):
    io = SplitIO(FakeTreeIO())
    executor = ResourceExecutor(CgroupFiles(v1_host), clock=clock, io=io)
    batch = [executor.updater("cpuset.cpus", POD, "0-3"),
             executor.updater("cpuset.cpus", C1, "1-2"), executor.updater("cpuset.cpus", C2, "3"),
             executor.updater("cpu.cfs_quota_us", C1, 50_000), executor.updater("cpu.cfs_quota_us", C2, 20_000)]
    executor.update_batch(batch)
    (v1_host.cgroup_root / "cpu" / C2 / "cpu.cfs_quota_us").write_text("-1\n")
    (v1_host.cgroup_root / "cpuset" / C1 / "cpuset.cpus").write_text("1\n")  # narrower: the merge widens it again
    io.one_by_one.clear()

    result = executor.update_batch(batch, use_cache=False)

    assert io.one_by_one == []
    assert len(io.batches[-1]) == len(set(io.batches[-1])) == len(batch)
    assert [r.outcome for r in result] == [Outcome.SKIPPED, Outcome.WRITTEN, Outcome.SKIPPED,
                                           Outcome.SKIPPED, Outcome.WRITTEN]
    assert read(v1_host, "cpu/" + C2, "cpu.cfs_quota_us") == "20000"
    assert read(v1_host, "cpuset/" + C1, "cpuset.cpus") == "1-2"


def test_a_file_read_ahead_serves_its_first_read_only(v1_host, clock):
    """v1 quota is levelled (raised in pass one, set in pass two); with rollback each update
    also reads the text it would restore: after the first read, every read goes to the file."""
    io = SplitIO(FakeTreeIO())
    executor = ResourceExecutor(CgroupFiles(v1_host), clock=clock, io=io)
    quota, other = executor.updater("cpu.cfs_quota_us", C1, 50_000), executor.updater("cpu.shares", C2, 256)
    result = executor.update_batch([quota, executor.updater("cpu.cfs_quota_us", C1, 60_000), other],
                                   use_cache=False, rollback=True)
    assert [r.outcome for r in result] == [Outcome.WRITTEN] * 3
    assert io.batches == [[quota.path, other.path]] and io.one_by_one == [quota.path] * 2


def test_a_cgroup_gone_before_a_pass_without_the_cache_is_gone_not_failed(v1_host, clock):
    io = SplitIO(FakeTreeIO())
    executor = ResourceExecutor(CgroupFiles(v1_host), clock=clock, io=io)
    batch = [executor.updater("cpu.cfs_quota_us", C1, 50_000), executor.updater("cpu.cfs_quota_us", C2, 20_000)]
    shutil.rmtree(v1_host.cgroup_root / "cpu" / C1)
    result = executor.update_batch(batch, use_cache=False)
    assert [r.outcome for r in result] == [Outcome.GONE, Outcome.WRITTEN]
