"""Writes to resctrl (/sys/fs/resctrl): control groups, their schemata and tasks.

Like cgroup writes: read first and write only what differs. A schemata write carries
only the lines that change (the kernel keeps the others); a task is written once per
task id (a task that exited meanwhile is normal life).
"""
from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Mapping

import structlog

from system.errors import classify_os_error
from system.host import Host
from system.resctrl import format_schemata, read_schemata, read_tasks, resctrl_group_dir

log = structlog.get_logger(__name__)


class ResctrlWriter:
    def __init__(self, host: Host) -> None:
        self.host = host

    def ensure_group(self, group: str) -> bool:
        """Create the control group if absent; True when it was created."""
        path = resctrl_group_dir(self.host, group)
        try:
            path.mkdir()
        except FileExistsError:
            return False
        except OSError as exc:
            raise classify_os_error(exc, path, path.parent) from None
        log.info("resctrl_group_created", group=group)
        return True

    def write_schemata(self, group: str, wanted: Mapping[str, Mapping[int, str]]) -> bool:
        """Write the lines of `wanted` the group does not hold yet; True when something was written."""
        current = read_schemata(self.host, group)
        changed = {name: domains for name, domains in wanted.items()
                   if {k: v.lower() for k, v in current.get(name, {}).items()}
                   != {k: v.lower() for k, v in domains.items()}}
        if not changed:
            return False
        self._write(resctrl_group_dir(self.host, group) / "schemata", format_schemata(changed))
        return True

    def add_tasks(self, group: str, task_ids: Iterable[int]) -> int:
        """Move tasks into the group; returns how many were written (exited tasks are skipped)."""
        present = read_tasks(self.host, group)
        path = resctrl_group_dir(self.host, group) / "tasks"
        written = 0
        for tid in sorted(set(task_ids) - present):
            if self._write(path, "%d\n" % tid):
                written += 1
        return written

    @staticmethod
    def _write(path: os.PathLike[str], text: str) -> bool:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)  # as `echo > file` does; kernfs ignores it
        except OSError as exc:
            raise classify_os_error(exc, path, os.path.dirname(path)) from None
        try:
            os.write(fd, text.encode())
        except OSError as exc:
            if exc.errno == errno.ESRCH:
                return False  # the task exited before it could move
            raise classify_os_error(exc, path, os.path.dirname(path)) from None
        finally:
            os.close(fd)
        return True
