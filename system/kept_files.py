"""Kept-open fds for kernel files read often: one open, then pread at offset 0 each time.

A kept fd on a cgroup that was removed reads ENODEV: the fd is dropped and the file is
opened again once (the cgroup may have been re-created under the same name); if that
fails the cgroup is Gone. The pool is bounded; the oldest fd is closed first.
"""

from __future__ import annotations

import errno
import os
from collections import OrderedDict
from pathlib import Path

from system.cgroup_files import read_fd_text
from system.errors import Gone, classify_os_error

DEFAULT_MAX_OPEN = 2048


class KeptFiles:
    """A bounded pool of read-only fds keyed by path. Not thread-safe; close() when done."""

    def __init__(self, max_open: int = DEFAULT_MAX_OPEN) -> None:
        self._fds: OrderedDict[str, int] = OrderedDict()
        self._max_open = max(1, max_open)

    def __len__(self) -> int:
        return len(self._fds)

    def __enter__(self) -> "KeptFiles":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self, key: str) -> int:
        try:
            fd = os.open(key, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            path = Path(key)
            raise classify_os_error(exc, path, path.parent) from None
        self._fds[key] = fd
        while len(self._fds) > self._max_open:
            _, old = self._fds.popitem(last=False)
            os.close(old)
        return fd

    def drop(self, path: Path | str) -> None:
        fd = self._fds.pop(str(path), None)
        if fd is not None:
            os.close(fd)

    def drop_under(self, directory: Path | str) -> int:
        """Close every fd of files under ``directory`` (a cgroup that is going away)."""
        prefix = str(directory).rstrip("/") + "/"
        keys = [key for key in self._fds if key.startswith(prefix)]
        for key in keys:
            os.close(self._fds.pop(key))
        return len(keys)

    def read_text(self, path: Path | str) -> str:
        key = str(path)
        fd = self._fds.get(key)
        if fd is None:
            fd = self._open(key)
        else:
            self._fds.move_to_end(key)
        try:
            return read_fd_text(fd)
        except OSError as exc:
            self.drop(key)
            if exc.errno not in (errno.ENODEV, errno.ENOENT):
                path = Path(key)
                raise classify_os_error(exc, path, path.parent) from None
        # the cgroup behind the fd was removed: try once more in case it was re-created
        path = Path(key)
        fd = self._open(key)
        try:
            return read_fd_text(fd)
        except OSError as exc:
            self.drop(key)
            if exc.errno == errno.ENODEV:
                raise Gone("cgroup was removed", path.parent) from None
            raise classify_os_error(exc, path, path.parent) from None

    def close(self) -> None:
        while self._fds:
            _, fd = self._fds.popitem()
            os.close(fd)
