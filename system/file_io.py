"""The one door for kernel-file IO: read and write by path, once or on kept-open fds.

Readers (system.cgroup_readers), the registry shell (system.cgroup_files) and the
executor (resourceexecutor) all move bytes through this module, so there is one write
routine, one read routine, one errno classification and one pool of kept fds with one
eviction rule and one budget for the whole daemon.

Kept fds: an open + close of a cgroup file costs several microseconds, a pread/pwrite
on a kept fd about one, so files used again and again stay open. A kept fd on a cgroup
that was removed answers ENODEV: it is closed and the path opened afresh once (the
cgroup may have been re-created under the same name); if that fails the cgroup is Gone.
The pool is bounded (default: half the soft RLIMIT_NOFILE, at most 480, shared by
everyone who holds the pool: the daemon's fds stay few whatever the number of pods; the
collectors' per-second reads keep none, see FileBatch) and evicts the least recently used fd first; `sweep()`
closes fds not used since the previous sweep, `release(dir)` those of a removed cgroup.
Not thread-safe: one owner, one event loop.
"""

from __future__ import annotations

import errno
import os
import resource
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from system.errors import Gone, InvalidValue, classify_os_error

READ_CHUNK = 64 * 1024
# 512 less what the daemon holds besides the pool (sockets, sqlite, epoll, eventfds, pipes:
# 19 at 1,000 pods, measured), so that all its fds stay within 512 whatever the pod count
DEFAULT_FD_CAP = 480

_READ = os.O_RDONLY | os.O_CLOEXEC
_WRITE = os.O_WRONLY | os.O_CLOEXEC
# One-shot writes truncate so a regular file (fake trees in tests) ends up holding exactly
# the text, as a kernel file would; kept fds skip it (kernel files ignore offset/length).
_WRITE_ONCE = _WRITE | os.O_TRUNC
_RDWR = os.O_RDWR | os.O_CLOEXEC
_STALE = (errno.ENODEV, errno.ENOENT)  # a kept fd whose cgroup was removed
# Set in a file's anchor index (the C side's KOORD_SAME_DIR): its path in a batch's blob is
# its name only, in the directory of the last path given in full (name_once).
SAME_DIR = 0x10000

try:  # the C batch reader; without it FileBatch reads file by file in Python
    from system._perf_ext import ffi as _ffi
    from system._perf_ext import lib as _lib
    if _lib.KOORD_SAME_DIR != SAME_DIR:  # pragma: no cover - an extension built from other sources
        raise ImportError("system._perf_ext was built from another system/_perf_build.py")
    _read_files = _lib.koord_read_files
    _read_values = _lib.koord_read_values
except (ImportError, AttributeError):  # pragma: no cover - extension not built
    _ffi = _read_files = _read_values = None


def fd_budget(cap: int = DEFAULT_FD_CAP) -> int:
    """Half the process's soft fd limit, at most `cap`: room for everything else."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return cap
    return max(1, min(cap, soft // 2))


def _typed(exc: OSError, path: str) -> Exception:
    return classify_os_error(exc, path, os.path.dirname(path))


def _ascii(text: str, path: str) -> bytes:
    try:
        return text.encode("ascii")
    except UnicodeEncodeError:
        raise InvalidValue("non-ASCII text for a kernel file", path) from None


def read_fd_text(fd: int) -> str:
    """Read a whole small kernel file from offset 0 of an open fd."""
    return read_fd_bytes(fd).decode("ascii", "replace")


def read_fd_bytes(fd: int) -> bytes:
    """`read_fd_text` undecoded."""
    first = os.pread(fd, READ_CHUNK, 0)
    if len(first) < READ_CHUNK:  # the common case: the whole file in one read
        return first
    chunks = [first]
    offset = len(first)
    while True:
        chunk = os.pread(fd, READ_CHUNK, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        if len(chunk) < READ_CHUNK:
            break
    return b"".join(chunks)


def read_path_text(path: str) -> str:
    """open + read + close of one kernel file, errors typed (text not stripped)."""
    try:
        fd = os.open(path, _READ)
    except OSError as exc:
        raise _typed(exc, path) from None
    try:
        return read_fd_text(fd)
    except OSError as exc:
        raise _typed(exc, path) from None
    finally:
        os.close(fd)


def write_path_text(path: str, text: str) -> None:
    """open + one write + close of one kernel file (no O_CREAT: a wrong name fails)."""
    data = _ascii(text, path)
    try:
        fd = os.open(path, _WRITE_ONCE)
    except OSError as exc:
        raise _typed(exc, path) from None
    try:
        os.write(fd, data)
    except OSError as exc:
        raise _typed(exc, path) from None
    finally:
        os.close(fd)


class KeptFdPool:
    """Kept-open fds keyed by path, least recently used evicted first."""

    def __init__(self, max_open: int | None = None) -> None:
        if max_open is None:
            max_open = fd_budget()
        if max_open < 1:
            raise ValueError("max_open must be positive")
        self.max_open = max_open
        self._fds: OrderedDict[str, tuple[int, bool, bool]] = OrderedDict()  # fd, readable, writable
        self._used: set[str] = set()  # paths touched since the last sweep

    def __len__(self) -> int:
        return len(self._fds)

    def __enter__(self) -> "KeptFdPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ IO

    def read(self, path: str) -> str:
        """The file's whole text (not stripped)."""
        fd = self._fd(path, for_write=False)
        try:
            return read_fd_text(fd)
        except OSError as exc:
            self._drop(path)
            if exc.errno not in _STALE:
                raise _typed(exc, path) from None
        fd = self._fd(path, for_write=False)  # re-created under the same name?
        try:
            return read_fd_text(fd)
        except OSError as exc:
            self._drop(path)
            if exc.errno == errno.ENODEV:
                raise Gone("cgroup was removed", os.path.dirname(path)) from None
            raise _typed(exc, path) from None

    def write(self, path: str, text: str) -> None:
        """One pwrite of `text` at offset 0; KernelRejected carries the errno."""
        data = _ascii(text, path)
        fd = self._fd(path, for_write=True)
        try:
            os.pwrite(fd, data, 0)
            return
        except OSError as exc:
            self._drop(path)
            if exc.errno != errno.ENODEV:
                raise _typed(exc, path) from None
        fd = self._fd(path, for_write=True)
        try:
            os.pwrite(fd, data, 0)
        except OSError as exc:
            self._drop(path)
            raise _typed(exc, path) from None

    # ------------------------------------------------------------ lifetime

    def release(self, directory: str | os.PathLike[str]) -> int:
        """Close kept fds of files at or below `directory` (a removed cgroup's dir)."""
        prefix = os.fspath(directory).rstrip("/") + "/"
        doomed = [path for path in self._fds if path.startswith(prefix)]
        for path in doomed:
            self._drop(path)
        return len(doomed)

    def release_file(self, path: str) -> None:
        """Close the kept fd of one file, if any."""
        self._drop(path)

    def sweep(self) -> int:
        """Close fds not used since the previous sweep."""
        used = self._used
        idle = [path for path in self._fds if path not in used]
        for path in idle:
            self._drop(path)
        used.clear()
        return len(idle)

    def close(self) -> None:
        while self._fds:
            _, (fd, _, _) = self._fds.popitem()
            os.close(fd)
        self._used.clear()

    # ------------------------------------------------------------ internals

    def _fd(self, path: str, for_write: bool) -> int:
        self._used.add(path)
        kept = self._fds.get(path)
        if kept is not None:
            if kept[2] if for_write else kept[1]:
                self._fds.move_to_end(path)
                return kept[0]
            self._drop(path)  # opened for the other direction: reopen for both
        return self._open(path, for_write)

    def _open(self, path: str, for_write: bool) -> int:
        readable, writable = True, True
        try:
            fd = os.open(path, _RDWR)
        except PermissionError:  # read-only or write-only kernel file
            readable, writable = not for_write, for_write
            try:
                fd = os.open(path, _WRITE if for_write else _READ)
            except OSError as exc:
                raise _typed(exc, path) from None
        except OSError as exc:
            raise _typed(exc, path) from None
        self._fds[path] = (fd, readable, writable)
        while len(self._fds) > self.max_open:
            _, (old, _, _) = self._fds.popitem(last=False)
            os.close(old)
        return fd

    def _drop(self, path: str) -> None:
        kept = self._fds.pop(path, None)
        if kept is not None:
            os.close(kept[0])


# One read() per file in the batch; a file this long (memory.stat is ~1.5 KiB) is read again
# whole, in Python.
BATCH_FILE_MAX = 16384


class FileBatch:
    """Many small files read together, each open + read + close: no fd outlives a read,
    whatever the number of cgroups. With the C extension the whole batch is one call that
    releases the GIL (so it can run in a thread while the event loop goes on) and opens the
    files relative to the directories most of them share (as ValueBatch); the paths' bytes
    and the output buffers are made once and reused, and the path strings are dropped once
    packed (as ValueBatch's specs). One reader at a time."""

    def __init__(self, paths: Sequence[str], native: bool = True, bytes_per_file: int = 256) -> None:
        self._paths: tuple[str, ...] | None = tuple(paths)
        self._count = len(self._paths)
        self._native = native and _read_files is not None
        self._bytes_per_file = bytes_per_file  # the output's room a file before it grows
        self._packed = False  # paths packed by the first read (in the reading thread)
        # read_texts' last output bytes, per-file lengths and texts: an unchanged read returns the same list
        self._last_texts: tuple[bytes, list[int], list[str | None]] | None = None

    def __len__(self) -> int:
        return self._count

    @property
    def paths(self) -> tuple[str, ...]:
        """The files' paths, as given (read back from the blob once packed)."""
        if self._paths is not None:
            return self._paths
        return self._anchored.whole(self._blob.split(b"\0")[:self._count])

    def read(self) -> list[bytes | None]:
        """Each file's bytes, None where it could not be read (gone, absent, refused)."""
        if not self._native:
            return [_read_or_none(path) for path in self.paths]
        return self._read_native(_split)

    def read_texts(self) -> list[str | None]:
        """Each file's text as ASCII, stripped, None where it could not be read: the
        batch's output decoded in one go and cut per file. When every file held the same
        bytes as at the previous call, that call's list itself (the same object, nothing cut
        again; not to be changed): a caller that compared those texts can tell by identity
        that there is nothing new to compare (with the C reader; without it, a new list)."""
        if not self._native:
            return [None if data is None else ascii_text(data) for data in self.read()]
        return self._read_native(self._texts_unless_unchanged)

    def _texts_unless_unchanged(self, paths: Callable[[], Sequence[str]], buffer: object, offsets: list[int],
                                lens: list[int]) -> list[str | None]:
        data = _output_bytes(buffer, offsets, lens)
        last = self._last_texts
        if last is not None and last[1] == lens and last[0] == data:
            return last[2]
        texts = _texts_of(paths, data, offsets, lens)
        # a file that filled its BATCH_FILE_MAX bytes is read again whole: not all in `data`
        self._last_texts = (data, lens, texts) if BATCH_FILE_MAX not in lens else None
        return texts

    def _read_native(self, split: Callable[..., list[Any]]) -> list[Any]:
        if not self._packed:
            self._anchored, below = _Anchored.of(self.paths)
            self._blob = b"".join(path + b"\0" for path in below)
            self._paths = None
            self._packed = True
        anchored = self._anchored
        with _lent(_OUTPUTS, _Output) as output:
            output.fit(self._count, self._bytes_per_file)
            return _read_into(output, self._count, lambda: self.paths, self._blob, anchored.blob, anchored.count,
                              anchored.anchor_of, split)


class _Output:
    """The C file reader's output for up to `size` files (offsets, lengths, the bytes), with
    the anchor array of a read whose files have none (-1 each: read_files_once's), grown as
    needed; lent from _OUTPUTS for a read."""

    def __init__(self) -> None:
        self.size = self.cap = 0

    def fit(self, n: int, bytes_per_file: int) -> None:
        assert _ffi is not None
        if max(1, n) > self.size:
            self.size = max(n, 2 * self.size, 1)
            self.offsets = _ffi.new("long[]", self.size)
            self.lens = _ffi.new("int[]", self.size)
            self.no_anchor = _ffi.new("int[]", [-1] * self.size)
        if self.cap < n * bytes_per_file + BATCH_FILE_MAX:
            self.grow(n * bytes_per_file + BATCH_FILE_MAX)

    def grow(self, cap: int) -> None:
        assert _ffi is not None
        self.cap = cap
        self.out = _ffi.new("char[]", cap)


# The C readers' buffers not lent to a read now (a FileBatch's, a ValueBatch's and
# read_files_once's). A batch used to keep its own for good: at 1,000 pods the collectors'
# 24 batches held ~2.1 MiB that only one read at a time uses; a read takes one (made, or
# grown, when none is free or big enough) and gives it back, so there are as many as reads
# run at once (list.pop and append are atomic: any thread).
_OUTPUTS: list[_Output] = []
_VALUE_ARRAYS: list[_ValueArrays] = []
B = TypeVar("B")


@contextmanager
def _lent(free: list[B], make: Callable[[], B]) -> Iterator[B]:
    """A free buffer (or a new one) for the block, given back to `free` after it."""
    try:
        buffer = free.pop()
    except IndexError:
        buffer = make()
    try:
        yield buffer
    finally:
        free.append(buffer)


def read_files_once(paths: Sequence[str]) -> list[bytes | None]:
    """Each file's bytes (None where it could not be read): open + read + close in one C
    call, whole paths, into a buffer lent as a FileBatch's is. For a few dozen files read now
    and then (the reconciler's drift check), where a FileBatch's setup (anchors, buffers of
    its own) costs more than it saves."""
    if _read_files is None:
        return [_read_or_none(path) for path in paths]
    if not paths:
        return []
    blob = b"".join(os.fsencode(path) + b"\0" for path in paths)
    with _lent(_OUTPUTS, _Output) as output:
        output.fit(len(paths), 64)
        return _read_into(output, len(paths), lambda: paths, blob, b"", 0, output.no_anchor, _split)


def _read_into(output: _Output, n: int, paths: Callable[[], Sequence[str]], blob: bytes, anchors: bytes,
               anchor_count: int, anchor_of: object, split: Callable[..., list[Any]]) -> list[Any]:
    """One koord_read_files call over the n files packed in `blob` (opened relative to the
    packed `anchors` as anchor_of says), again with a doubled buffer while some
    file found no room; `paths()` gives their paths (only a file too long is read again).
    The output is cut per file by `split` (`_split`: bytes; FileBatch.read_texts: texts)."""
    assert _ffi is not None and _read_files is not None
    while True:
        _read_files(anchors, anchor_count, blob, anchor_of, n, output.out, output.cap, BATCH_FILE_MAX,
                    output.offsets, output.lens)
        lens = _ffi.unpack(output.lens, n)
        if -errno.ENOBUFS not in lens:
            return split(paths, output.out, _ffi.unpack(output.offsets, n), lens)
        output.grow(output.cap * 2)


def _split(paths: Callable[[], Sequence[str]], buffer: object, offsets: list[int],
           lens: list[int]) -> list[bytes | None]:
    """The C reader's output cut per file: None where it failed, a file that filled its
    BATCH_FILE_MAX bytes read again whole."""
    return _cut(paths, _output_bytes(buffer, offsets, lens), offsets, lens, _read_or_none)


def _texts_of(paths: Callable[[], Sequence[str]], output: bytes, offsets: list[int],
              lens: list[int]) -> list[str | None]:
    """The C reader's output bytes cut per file as ASCII texts, stripped (as `_split`). The
    output is decoded once: an undecodable byte becomes one replacement character, so the
    byte offsets stay the text's offsets."""
    def whole(path: str) -> str | None:
        data = _read_or_none(path)
        return None if data is None else ascii_text(data)
    text = output.decode("ascii", "replace")
    return [None if part is None else part.strip() for part in _cut(paths, text, offsets, lens, whole)]


def _output_bytes(buffer: object, offsets: list[int], lens: list[int]) -> bytes:
    assert _ffi is not None
    return _ffi.buffer(buffer, offsets[-1] + max(0, lens[-1]) if offsets else 0)[:]


def _cut(paths: Callable[[], Sequence[str]], data: Any, offsets: list[int], lens: list[int],
         whole: Callable[[str], Any]) -> list[Any]:
    """`data` cut per file: None where the file failed, `whole(path)` for a file that
    filled its BATCH_FILE_MAX bytes."""
    out: list[Any] = []
    named: Sequence[str] = ()  # the paths, read back at the first file too long
    for i, (offset, length) in enumerate(zip(offsets, lens)):
        if length < 0:
            out.append(None)
        elif length == BATCH_FILE_MAX:
            named = named or paths()
            out.append(whole(named[i]))
        else:
            out.append(data[offset:offset + length])
    return out


def ascii_text(data: bytes) -> str:
    """A kernel file's bytes as text, stripped; a byte ASCII has no letter for becomes U+FFFD."""
    return data.decode("ascii", "replace").strip()


def _read_or_none(path: str) -> bytes | None:
    try:
        fd = os.open(path, _READ)
    except OSError:
        return None
    try:
        return read_fd_bytes(fd)  # as the C reader gives it: a byte ASCII has no letter for kept
    except OSError:
        return None
    finally:
        os.close(fd)


# Values ValueBatch gives per file (the C side's KOORD_VALUES_PER_FILE).
VALUES_PER_FILE = 2
# Directories a batch opens files relative to (the C side's KOORD_MAX_ANCHORS), and how many
# of the batch's files one must hold to be worth its open: opening a file relative to a
# directory skips walking the path down to it, ~1.5 us of a ~6.5 us open + read + close at
# the depth of a pod's cgroup.
MAX_ANCHORS = 64
ANCHOR_SHARE = 16
_EFBIG = -errno.EFBIG


class ValueBatch:
    """Many small files read and parsed together, each open + read + close: what the
    collectors read every second. ``specs`` are (path, keys): keys "" for a file holding
    one number (cpuacct.usage, memory.usage_in_bytes), else up to two space-separated keys
    of "key value" lines (memory.stat's inactive_file, cpu.stat's "nr_periods
    nr_throttled"). With the C extension the whole batch is one call that releases the GIL
    and hands back only integers: no bytes or str per file; and it opens the files relative
    to the few directories most of them share (choose_anchors; opened for that call only, so
    no fd outlives a read and a re-created directory is seen). One reader at a time."""

    def __init__(self, specs: Sequence[tuple[str, str]], native: bool = True) -> None:
        # dropped once packed in the C reader's blob (the collectors keep dozens of batches
        # of thousands of files: the tuples and path strings were more than the bytes)
        self._specs: tuple[tuple[str, str], ...] | None = tuple(specs)
        self._count = len(self._specs)
        self._native = native and _read_values is not None
        self._packed = False  # the specs are packed by the first read (in the reading thread)

    def __len__(self) -> int:
        return self._count

    @property
    def specs(self) -> tuple[tuple[str, str], ...]:
        """(path, keys) of each file, as given (read back from the blob once packed)."""
        if self._specs is not None:
            return self._specs
        words = self._blob.split(b"\0")
        paths = self._anchored.whole(words[0:2 * self._count:2])
        return tuple((path, keys.decode("ascii")) for path, keys in zip(paths, words[1:2 * self._count:2]))

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(path for path, _ in self.specs)

    def read(self) -> tuple[list[int], list[int]]:
        """(values, status): file i's k-th value at values[i * VALUES_PER_FILE + k]
        (meaningful where status[i] == 0); status[i] < 0 where the file could not be read
        or parsed (gone, absent, a key missing)."""
        if not self._native:
            return _values_in_python(self.specs)
        assert _ffi is not None and _read_values is not None
        n = self._count
        if not self._packed:
            specs = self.specs
            self._anchored, below = _Anchored.of([path for path, _ in specs])
            self._blob = b"".join(path + b"\0" + keys.encode("ascii") + b"\0" for path, (_, keys) in zip(below, specs))
            self._specs = None
            self._packed = True
        anchored = self._anchored
        with _lent(_VALUE_ARRAYS, _ValueArrays) as arrays:
            arrays.fit(n)
            _read_values(anchored.blob, anchored.count, self._blob, anchored.anchor_of, n, arrays.values,
                         arrays.status)
            values = _ffi.unpack(arrays.values, n * VALUES_PER_FILE)
            status = _ffi.unpack(arrays.status, n)
        if _EFBIG in status:  # a file longer than the C buffer: parsed here
            specs = self.specs
            for i, code in enumerate(status):
                if code == _EFBIG:
                    status[i] = _value_into(specs[i], values, i)
        return values, status


class _ValueArrays:
    """koord_read_values' output for up to `size` files (VALUES_PER_FILE values and a
    status each), grown as needed: lent from _VALUE_ARRAYS for a read."""

    __slots__ = ("size", "values", "status")

    def __init__(self) -> None:
        self.size = 0

    def fit(self, n: int) -> None:
        assert _ffi is not None
        if max(1, n) > self.size:
            self.size = max(n, 1)
            self.values = _ffi.new("int64_t[]", self.size * VALUES_PER_FILE)
            self.status = _ffi.new("int[]", self.size)


class _Anchored:
    """choose_anchors' answer as the C readers take it: the anchor directories and each
    file's anchor; a batch's blob then holds only the part of each path below its anchor
    (at 1,000 pods the collectors' batches held ~2 MiB of paths, mostly their anchors), or
    only its name after a file of the same directory (name_once)."""

    __slots__ = ("anchors", "blob", "count", "anchor_of")

    def __init__(self, anchors: list[str], anchor_of: list[int]) -> None:
        assert _ffi is not None
        self.anchors = anchors
        self.blob = b"".join(os.fsencode(anchor) + b"\0" for anchor in anchors)
        self.count = len(anchors)
        self.anchor_of = _ffi.new("int[]", anchor_of or [0])

    @classmethod
    def of(cls, paths: Sequence[str]) -> tuple[_Anchored, list[bytes]]:
        """The anchors of ``paths``, and each path as the C readers take it (below its anchor,
        or whole)."""
        anchors, anchor_of, rel_at = choose_anchors(paths)
        below = [os.fsencode(path)[at:] for path, at in zip(paths, rel_at)]
        name_once(below, anchor_of)
        return cls(anchors, anchor_of), below

    @classmethod
    def none(cls, count: int) -> _Anchored:
        """No anchor for any of ``count`` paths: each is opened whole (benches' floors)."""
        return cls([], [-1] * count)

    def whole(self, below: Sequence[bytes]) -> tuple[str, ...]:
        """The whole paths of files given as the C readers take them."""
        anchors, anchor_of = self.anchors, self.anchor_of
        paths = []
        directory = ""  # of the last path given in full
        for i, given in enumerate(below):
            path, anchor = os.fsdecode(given), anchor_of[i]
            if anchor >= 0 and anchor & SAME_DIR:
                path, anchor = directory + path, anchor & ~SAME_DIR
            else:
                directory = path[:path.rfind("/") + 1]
            paths.append(path if anchor < 0 else anchors[anchor] + "/" + path)
        return tuple(paths)


def name_once(below: list[bytes], anchor_of: list[int]) -> None:
    """Where a file under an anchor lies in the directory of the last path given in full
    before it (a cgroup's files follow each other in a batch: a pod's usage files, the
    reconciler's files of a container), keep only its name and flag it SAME_DIR: in place.
    The directory was most of such a path's bytes (the pod's and container's ids)."""
    directory = b""
    for i, path in enumerate(below):
        cut = path.rfind(b"/") + 1
        if cut and cut == len(directory) and anchor_of[i] >= 0 and path.startswith(directory):
            below[i] = path[cut:]
            anchor_of[i] |= SAME_DIR
        else:
            directory = path[:cut]


def choose_anchors(paths: Sequence[str]) -> tuple[list[str], list[int], list[int]]:
    """The directories to open the files relative to: for each path, the deepest of its
    directory and the three above it that at least ANCHOR_SHARE of the paths share (a QoS
    tier's cgroup, for pods and their containers), at most MAX_ANCHORS of them. (anchors,
    anchor index or -1 per path, where the relative part starts in each path's bytes)."""
    cut = [path.rfind("/") for path in paths]  # where the directory looked at ends
    anchor_of = [-1] * len(paths)
    rel_at = [0] * len(paths)
    anchors: dict[str, int] = {}
    skip: list[int] = []  # per anchor: its length in bytes and the slash
    todo = [i for i, end in enumerate(cut) if end > 0]
    for _ in range(4):
        dirs = [paths[i][:cut[i]] for i in todo]
        shared = Counter(dirs)
        left = []
        for i, directory in zip(todo, dirs):
            if shared[directory] < ANCHOR_SHARE:
                cut[i] = paths[i].rfind("/", 0, cut[i])
                if cut[i] > 0:
                    left.append(i)
                continue
            chosen = anchors.get(directory)
            if chosen is None:
                if len(anchors) >= MAX_ANCHORS:
                    continue
                chosen = anchors[directory] = len(anchors)
                skip.append(len(os.fsencode(directory)) + 1)
            anchor_of[i] = chosen
            rel_at[i] = skip[chosen]
        todo = left
    return list(anchors), anchor_of, rel_at


def _values_in_python(specs: Sequence[tuple[str, str]]) -> tuple[list[int], list[int]]:
    values = [0] * (len(specs) * VALUES_PER_FILE)
    status = [_value_into(spec, values, i) for i, spec in enumerate(specs)]
    return values, status


def _value_into(spec: tuple[str, str], values: list[int], i: int) -> int:
    """Parse one file into values[i * VALUES_PER_FILE:]; its status (0 or < 0)."""
    path, keys = spec
    text = _read_or_none(path)
    if text is None:
        return -errno.ENOENT
    try:
        parsed = parse_values(text, keys)
    except ValueError:
        return -errno.ENODATA
    values[i * VALUES_PER_FILE:i * VALUES_PER_FILE + len(parsed)] = parsed
    return 0


def parse_values(text: bytes, keys: str) -> list[int]:
    """What the C reader takes from one file: its one number (keys ""), or the values of
    the "key value" lines named by keys. ValueError when one is missing or not a number."""
    if not keys:
        words = text.split(None, 1)
        if not words:
            raise ValueError("empty file")
        return [int(words[0])]
    wanted = keys.split()
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition(b" ")
        found[key.decode("ascii", "replace")] = value
    try:
        return [int(found[key].split(None, 1)[0]) for key in wanted]
    except (KeyError, IndexError):
        raise ValueError("missing key in %r" % keys) from None
