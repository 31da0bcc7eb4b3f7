"""State on disk, written so a crash, a full disk or a hostile directory cannot corrupt it.

- `write_atomically(path, data)`: a temp file of a name nobody can predict, created with
  O_EXCL|O_NOFOLLOW (a symlink planted in the directory is never followed), written,
  fsynced, renamed over `path`, and the directory fsynced: a reader finds the old file or
  the new one, never half of one.
- `move_aside(path)`: a file that cannot be trusted is renamed to `<name>.corrupt-<ns>`
  (unique), and only the newest KEEP_CORRUPT of those are kept.
- `is_environment_error(exc)`: a full disk, a read-only file system or a permission
  problem is the environment's fault, not the file's: keep the file and retry.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

KEEP_CORRUPT = 3
_ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO})


def is_environment_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in _ENVIRONMENT_ERRNOS


def write_atomically(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Blocking: call it from a worker thread when on the event loop."""
    # (os.urandom is what secrets.token_hex reads; secrets imports hashlib, whose OpenSSL
    # digests cost the daemon ~0.9 MiB of RSS for this one name)
    temp = path.with_name(".%s.%s.tmp" % (path.name, os.urandom(8).hex()))
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def move_aside(path: Path, keep: int = KEEP_CORRUPT, suffixes: tuple[str, ...] = ("",)) -> Path:
    """Rename `path` (and its companions `path + suffix`, e.g. sqlite's -wal and -shm) to a
    unique `.corrupt-<ns>` name; prune older copies beyond `keep`. The new name."""
    stamp = time.time_ns()
    aside = path.with_name("%s.corrupt-%d" % (path.name, stamp))
    for suffix in suffixes:
        source = Path(str(path) + suffix)
        if os.path.lexists(source):
            os.replace(source, Path(str(aside) + suffix))
    _prune(path, keep, suffixes)
    return aside


def _prune(path: Path, keep: int, suffixes: tuple[str, ...]) -> None:
    prefix = path.name + ".corrupt-"
    stamps = sorted((int(entry.name[len(prefix):]) for entry in path.parent.iterdir()
                     if entry.name.startswith(prefix) and entry.name[len(prefix):].isdigit()), reverse=True)
    for stamp in stamps[keep:]:
        for suffix in suffixes:
            stale = path.with_name("%s%d%s" % (prefix, stamp, suffix))
            try:
                stale.unlink()
            except FileNotFoundError:
                pass
