"""The executor's file door: read or write one cgroup file by path.

Paths are resolved once, when an updater is built, through system.CgroupFiles.
The bytes move through system.file_io (one write routine, one kept-fd pool for
the daemon); these classes only adapt it to the executor's `CgroupFileIO`
protocol, which tests wrap to record or count writes.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from system.file_io import (
    DEFAULT_FD_CAP,
    FileBatch,
    KeptFdPool,
    ascii_text,
    fd_budget,
    read_files_once,
    read_path_text,
    write_path_text,
)

# What a kept reader returns on each call: every file's text, stripped, None where unreadable;
# it may give back the list of its previous call (the same object) when no file changed.
KeptReader = Callable[[], list[str | None]]


class CgroupFileIO(Protocol):
    def read(self, path: str) -> str:
        """The file's text, stripped; raises system errors (Gone, NotSupported, ...)."""
        ...

    def read_many(self, paths: Sequence[str]) -> list[str | None]:
        """Each file's text, stripped, None where it could not be read. Holds no fd
        afterwards: a periodic check of thousands of files must not churn kept fds."""
        ...

    def kept_reader(self, paths: Sequence[str]) -> KeptReader:
        """`read_many` of these files for a caller that reads the same ones again and again:
        what a batch sets up once (the directories the files are opened relative to, the
        buffers) is kept in the reader. Holds no fd between calls. A call that finds every
        file holding the same bytes as the call before may return that call's list itself
        (FileBatch.read_texts): the caller must not change the lists it gets."""
        ...

    def write(self, path: str, text: str) -> None:
        """One write(2) of `text`; raises system errors (KernelRejected carries errno)."""
        ...

    def release(self, path_prefix: str) -> int:
        """Let go of anything held for files at or below this directory."""
        ...

    def sweep(self) -> int:
        """Let go of what was not used since the previous sweep (called by the
        executor whenever its write cache sweeps)."""
        ...

    def close(self) -> None:
        """Let go of everything held (shutdown)."""
        ...


class KernelFileIO:
    """open + read/write + close on the real (or fake) tree."""

    def read(self, path: str) -> str:
        return read_path_text(path).strip()

    def read_many(self, paths: Sequence[str]) -> list[str | None]:
        return read_batch(paths)

    def kept_reader(self, paths: Sequence[str]) -> KeptReader:
        return TextBatch(paths)

    def write(self, path: str, text: str) -> None:
        write_path_text(path, text)

    def release(self, path_prefix: str) -> int:
        return 0  # holds nothing

    def sweep(self) -> int:
        return 0

    def close(self) -> None:
        return None


def read_batch(paths: Sequence[str]) -> list[str | None]:
    """open + read + close of each file in one call of the C reader (file by file without
    it), no fd kept: the kept-fd pool's 480 fds would churn on the reconciler's thousands."""
    return [None if data is None else ascii_text(data) for data in read_files_once(paths)]


class TextBatch:
    """A FileBatch whose reads come back as `read_many`'s stripped texts."""

    __slots__ = ("_batch",)

    # Room a file gets in the batch's buffer before it grows: the files the executor
    # writes hold a number or a short list ("1024", "-1", "0-3", at most 20 bytes for a
    # 64-bit number). A reconciler turn keeps its reader (~1,300 files at 1,000 pods, six
    # turns): 64 bytes a file was ~100 KB a reader. Longer files make the buffer grow
    # once (read again at twice the room), and it stays grown.
    BYTES_PER_FILE = 16

    def __init__(self, paths: Sequence[str]) -> None:
        self._batch = FileBatch(paths, bytes_per_file=self.BYTES_PER_FILE)

    def __call__(self) -> list[str | None]:
        return self._batch.read_texts()


def default_max_open(cap: int = DEFAULT_FD_CAP) -> int:
    """Half the process's soft fd limit, at most `cap` (system.file_io.fd_budget)."""
    return fd_budget(cap)


class KeptFdFileIO:
    """Keeps cgroup files open and writes with pwrite at offset 0 (the default).

    On this machine's VM an open+close of a cgroup file costs ~6 us against
    ~1.2 us for a pwrite on a kept fd. The fds live in a system.file_io.KeptFdPool
    (least recently used evicted first, idle ones closed at each sweep, ENODEV on a
    removed cgroup retried once then Gone). Pass `pool` to share it, and its fd
    budget, with the readers; without one the IO makes its own of `max_open` fds
    (default: half the soft RLIMIT_NOFILE, at most 16384).
    """

    def __init__(self, max_open: int | None = None, pool: KeptFdPool | None = None) -> None:
        self.pool = pool if pool is not None else KeptFdPool(max_open)

    @property
    def max_open(self) -> int:
        return self.pool.max_open

    def __len__(self) -> int:
        return len(self.pool)

    def read(self, path: str) -> str:
        return self.pool.read(path).strip()

    def read_many(self, paths: Sequence[str]) -> list[str | None]:
        return read_batch(paths)  # past the pool: its fds are for the files written again and again

    def kept_reader(self, paths: Sequence[str]) -> KeptReader:
        return TextBatch(paths)

    def write(self, path: str, text: str) -> None:
        self.pool.write(path, text)

    def release(self, path_prefix: str) -> int:
        return self.pool.release(path_prefix)

    def sweep(self) -> int:
        return self.pool.sweep()

    def close(self) -> None:
        self.pool.close()
