"""The state directory: made private, refused when someone else could tamper with it, and
held by one daemon at a time.

- created 0700 when missing; an existing one must be a directory owned by this daemon's
  user; group- or world-writable permissions are taken away (logged), since a directory
  others can write is one where files can be planted;
- `StateDirLock` takes an exclusive flock on `<state-dir>/koordlet.lock` for the life of the
  process: a second daemon on the same directory stops at start (exit 2) with one line
  naming the first one's pid, instead of writing the same files.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

import structlog

from koordlet.agent import StartupError

log = structlog.get_logger(__name__)

LOCK_NAME = "koordlet.lock"


def prepare_state_dir(path: Path) -> None:
    """Create or check the state directory; StartupError (exit 2) with the reason."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
    except OSError as exc:
        raise StartupError(f"cannot create state dir {path}: {exc.strerror or exc}", exit_code=2) from exc
    if not stat.S_ISDIR(info.st_mode):
        raise StartupError(f"state dir {path} is not a directory", exit_code=2)
    if info.st_uid != os.geteuid():
        raise StartupError(f"state dir {path} is owned by uid {info.st_uid}, not by this daemon's "
                           f"(uid {os.geteuid()})", exit_code=2)
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.chmod(path, stat.S_IMODE(info.st_mode) & ~(stat.S_IWGRP | stat.S_IWOTH))
        log.warning("state_dir_mode_repaired", path=str(path), was=oct(stat.S_IMODE(info.st_mode)),
                    now=oct(stat.S_IMODE(info.st_mode) & ~(stat.S_IWGRP | stat.S_IWOTH)))
    if not os.access(path, os.W_OK | os.X_OK):
        raise StartupError(f"state dir {path} is not writable", exit_code=2)


class StateDirLock:
    """An exclusive flock on the state directory, held until `release()` (or the process ends)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StartupError(f"cannot open {self.path}: {exc.strerror or exc}", exit_code=2) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StartupError(f"another koordlet (pid {holder}) uses state dir {self.path.parent}",
                                   exit_code=2) from None
            raise StartupError(f"cannot lock {self.path}: {exc.strerror or exc}", exit_code=2) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, b"%d\n" % os.getpid(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
