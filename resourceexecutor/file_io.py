"""The executor's file door: read or write one cgroup file by path.

Paths are resolved once, when an updater is built, through system.CgroupFiles;
this shell only moves bytes and turns OSError into system's typed errors.  It
is a Protocol so tests can wrap the real writer to record or count writes.
"""
from __future__ import annotations

import os
from typing import Protocol

from system.cgroup_files import read_fd_text
from system.errors import classify_os_error

_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CLOEXEC


class CgroupFileIO(Protocol):
    def read(self, path: str) -> str:
        """The file's text, stripped; raises system errors (Gone, NotSupported, ...)."""
        ...

    def write(self, path: str, text: str) -> None:
        """One write(2) of `text`; raises system errors (KernelRejected carries errno)."""
        ...


class KernelFileIO:
    """open + read/write + close on the real (or fake) tree."""

    def read(self, path: str) -> str:
        try:
            fd = os.open(path, _READ_FLAGS)
        except OSError as exc:
            raise classify_os_error(exc, path, os.path.dirname(path)) from None
        try:
            return read_fd_text(fd).strip()
        except OSError as exc:
            raise classify_os_error(exc, path, os.path.dirname(path)) from None
        finally:
            os.close(fd)

    def write(self, path: str, text: str) -> None:
        try:
            fd = os.open(path, _WRITE_FLAGS)
        except OSError as exc:
            raise classify_os_error(exc, path, os.path.dirname(path)) from None
        try:
            os.write(fd, text.encode("ascii"))
        except OSError as exc:
            raise classify_os_error(exc, path, os.path.dirname(path)) from None
        finally:
            os.close(fd)
