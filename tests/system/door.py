"""Writes for tests through the daemon's one door (the executor), and raw text writes.

`write_value` is what a test uses to set a value the way production does (validated,
formatted, written by the executor, errors raised); `write_raw` puts text into a file
behind everybody's back (drift, kernel refusals of text no validator would pass)."""

from __future__ import annotations

from typing import Any

from resourceexecutor import KernelFileIO, ResourceExecutor
from system.cgroup_files import CgroupFiles
from system.file_io import write_path_text


def write_value(files: CgroupFiles, resource: str, cgroup_dir: str, value: Any) -> None:
    """Validate and write one value; InvalidValue / KernelRejected / Gone raised as is."""
    executor = ResourceExecutor(files, io=KernelFileIO())
    result = executor.update(executor.updater(resource, cgroup_dir, value, strict=True),
                             use_cache=False)
    if result.error is not None:
        raise result.error


def write_raw(files: CgroupFiles, resource: str, cgroup_dir: str, text: Any) -> None:
    """Write text as given to the resource's file (no validation)."""
    write_path_text(str(files.path(resource, cgroup_dir)), str(text))
