"""The single door for every cgroup and resctrl write: updaters, a
write-if-different cache, levelled batch updates and typed results.

It knows about cgroup files, not about pods.  Public API:

    ResourceExecutor(files, registry=..., policy=..., clock=...)
    executor_without_cgroups(host) -> a ResourceExecutor that refuses every write as not supported
        .updater(name, cgroup_dir, value) -> Updater
        .update(updater) -> UpdateResult
        .update_batch(updaters, rollback=False) -> BatchResult
        .update_levels([[...], [...]], rollback=False) -> BatchResult
        .forget_cgroup(cgroup_dir)
        await .apply_batch(...) / .apply_levels(...) / .in_io_thread(fn, ...)   the same in its IO thread
        .forget_cgroup_soon(cgroup_dir); await .aclose()
    Outcome: WRITTEN / SKIPPED / NOT_SUPPORTED / INVALID / GONE / FAILED
"""
from resourceexecutor.executor import ResourceExecutor, executor_without_cgroups
from resourceexecutor.file_io import CgroupFileIO, KeptFdFileIO, KernelFileIO
from resourceexecutor.outcome import BatchResult, Outcome, RollbackFailure, UpdateResult
from resourceexecutor.updater import MergeRule, Updater, UpdaterFactory, default_merge_rules
from resourceexecutor.write_cache import CachePolicy, WriteCache

__all__ = [
    "BatchResult", "CachePolicy", "CgroupFileIO", "KeptFdFileIO", "KernelFileIO", "MergeRule", "Outcome",
    "ResourceExecutor", "RollbackFailure", "UpdateResult", "Updater", "UpdaterFactory",
    "WriteCache", "default_merge_rules", "executor_without_cgroups",
]
