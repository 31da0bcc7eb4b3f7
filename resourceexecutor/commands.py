"""Write-only cgroup files: commands, not values (v2 `cgroup.kill`).

They cannot go through the write-if-different path: reading them fails and writing
the same "1" twice means two kills. Each call writes once, through the executor's IO.
"""
from __future__ import annotations

import structlog

from resourceexecutor.executor import ResourceExecutor
from resourceexecutor.outcome import Outcome
from system.errors import Gone, NotSupported, SystemFileError

log = structlog.get_logger(__name__)


def kill_cgroup(executor: ResourceExecutor, cgroup_dir: str) -> Outcome:
    """Write 1 to `cgroup_dir`/cgroup.kill (cgroup v2, kernel >= 5.14): every process below dies.

    NOT_SUPPORTED on v1 or an older kernel (the caller falls back to signalling
    the pids it reads), GONE when the cgroup vanished, FAILED otherwise.
    """
    updater = executor.updater("cgroup.kill", cgroup_dir, 1)
    if updater.problem is not None or updater.text is None:
        return Outcome.NOT_SUPPORTED if isinstance(updater.problem, NotSupported) else Outcome.INVALID
    if not executor.files.supported("cgroup.kill", cgroup_dir):
        return Outcome.NOT_SUPPORTED
    try:
        executor.io.write(updater.path, updater.text)
    except SystemFileError as exc:
        outcome = Outcome.GONE if isinstance(exc, Gone) else Outcome.FAILED
        log.warning("cgroup_kill_failed", cgroup=cgroup_dir, error=str(exc))
        return outcome
    return Outcome.WRITTEN
