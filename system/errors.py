"""Typed errors of the system package: nothing else escapes it.

Every failure of a kernel-file operation is one of four kinds, each a subclass of
SystemFileError carrying the path it concerns:

- NotSupported: the resource or file does not exist on this kernel / cgroup version.
- InvalidValue: a validator refused a value (nothing was written) or kernel text did not parse.
- Gone: the cgroup directory (or process) vanished; normal life for a removed pod.
- KernelRejected: the kernel refused a write; ``errno`` says why (EINVAL, EBUSY, ...).
"""

from __future__ import annotations

import errno as errno_codes
import os
from pathlib import Path


class SystemFileError(Exception):
    """Base of every error the system package raises."""

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None) -> None:
        self.path: str | None = None if path is None else str(path)
        self.message = message
        super().__init__(message if path is None else "%s (%s)" % (message, self.path))


class NotSupported(SystemFileError):
    """The resource or file is absent on this kernel or cgroup version."""


class InvalidValue(SystemFileError):
    """A validator refused a value (nothing written), or kernel text did not parse."""


class Gone(SystemFileError):
    """The cgroup directory (or the process) no longer exists."""


class KernelRejected(SystemFileError):
    """The kernel refused a write; ``errno`` holds the reason."""

    def __init__(
        self, message: str, path: str | os.PathLike[str] | None = None, errno: int = 0
    ) -> None:
        self.errno = errno
        name = errno_codes.errorcode.get(errno, str(errno))
        super().__init__("%s [%s]" % (message, name), path)


# errnos that mean "the kernel refused this value / operation" on a write.
_REJECT_ERRNOS = frozenset(
    {
        errno_codes.EINVAL,
        errno_codes.EBUSY,
        errno_codes.EACCES,
        errno_codes.EPERM,
        errno_codes.ENOSPC,
        errno_codes.ERANGE,
        errno_codes.EOPNOTSUPP,
        errno_codes.E2BIG,
        errno_codes.ESRCH,
        errno_codes.EROFS,
    }
)


def classify_os_error(
    exc: OSError, path: str | os.PathLike[str], directory: str | os.PathLike[str] | None = None
) -> SystemFileError:
    """Map an OSError raised on ``path`` to the package's typed errors.

    ``directory`` is the cgroup (or process) directory that holds the file: when the file
    is missing and the directory is missing too, the cgroup is Gone; when only the file is
    missing, the file is NotSupported here.
    """
    code = exc.errno or 0
    if code in (errno_codes.ENOENT, errno_codes.ENOTDIR):
        if directory is not None and not Path(directory).is_dir():
            return Gone("cgroup directory is gone", directory)
        return NotSupported("file does not exist", path)
    if code == errno_codes.ENODEV:
        # a kept-open fd on a removed cgroup reads ENODEV
        return Gone("cgroup was removed while its file was open", path)
    if code in _REJECT_ERRNOS:
        return KernelRejected("kernel refused the operation", path, errno=code)
    return KernelRejected("I/O error: %s" % (exc.strerror or code), path, errno=code)
