"""Waiting for the runtime's socket to come back, instead of sleeping blindly.

When containerd restarts, its NRI socket disappears (dial: ENOENT) and reappears
when it listens again; between bind() and listen() a dial is refused
(ECONNREFUSED), as it is on a stale socket file a crashed runtime left behind.
For those errors the stub watches the socket's directory with inotify and dials
again as soon as something happens to the socket's name, with a slow poll as a
safety net. When the directory itself does not exist yet (containerd makes
/var/run/nri when it starts), the nearest existing ancestor is watched instead and
the watch moves down as each directory appears: no busy polling while absent. Only
where inotify is unavailable does the stub fall back to a short poll. Every
other failure (permission denied, a runtime that accepts and then drops us)
keeps the capped exponential backoff: retrying those fast would only spin.

`retry_plan` is the pure decision; `SocketWatcher` is the thin IO shell.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import struct
from dataclasses import dataclass
from enum import Enum

# <sys/inotify.h>
_IN_ATTRIB = 0x00000004
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_DELETE_SELF = 0x00000400
_IN_MOVE_SELF = 0x00000800
_IN_IGNORED = 0x00008000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_WATCH_MASK = _IN_CREATE | _IN_MOVED_TO | _IN_ATTRIB | _IN_DELETE_SELF | _IN_MOVE_SELF
_EVENT_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)

# errnos that mean "nobody is listening at that path right now"
_ABSENT_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ECONNREFUSED})


class RetryKind(Enum):
    WATCH = "watch"  # the runtime is not there: dial again when the socket comes back
    BACKOFF = "backoff"  # something else is wrong: capped exponential backoff


@dataclass(frozen=True, slots=True)
class WatchPolicy:
    # Longest wait between two dials while the socket is absent and inotify watches its
    # directory or an ancestor (a safety net: a missed event costs at most this much).
    watched_poll: float = 5.0
    # Wait between two dials while the socket file exists but refuses (the runtime is
    # between bind and listen, or left a stale file), or when inotify is unavailable.
    poll: float = 0.1

    def __post_init__(self) -> None:
        if not 0 < self.poll <= self.watched_poll:
            raise ValueError("socket watch needs 0 < poll <= watched_poll")


def retry_kind(error: OSError) -> RetryKind:
    """How to wait after a failed dial: watch the path, or back off."""
    return RetryKind.WATCH if error.errno in _ABSENT_ERRNOS else RetryKind.BACKOFF


def watch_timeout(error: OSError, policy: WatchPolicy, inotify_active: bool) -> float:
    """How long to wait for a sign of the socket before dialing again anyway."""
    if error.errno == errno.ECONNREFUSED or not inotify_active:
        return policy.poll
    return policy.watched_poll


def names_in_events(buffer: bytes) -> tuple[list[str], bool]:
    """Names carried by a buffer of inotify events, and whether the watch itself ended
    (its directory was removed or moved)."""
    names: list[str] = []
    ended = False
    offset = 0
    size = _EVENT_HEADER.size
    while offset + size <= len(buffer):
        _, mask, _, length = _EVENT_HEADER.unpack_from(buffer, offset)
        raw = buffer[offset + size : offset + size + length]
        offset += size + length
        if mask & (_IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF):
            ended = True
        name = raw.split(b"\0", 1)[0]
        if name:
            names.append(os.fsdecode(name))
    return names, ended


class _Inotify:
    """inotify_init1 / inotify_add_watch through libc (ctypes); Linux only."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self._add_watch = libc.inotify_add_watch
        self._add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._add_watch.restype = ctypes.c_int
        self._rm_watch = libc.inotify_rm_watch
        self._rm_watch.argtypes = (ctypes.c_int, ctypes.c_int)
        self._rm_watch.restype = ctypes.c_int
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        self.fd: int = fd

    def add_watch(self, directory: str) -> int:
        wd = self._add_watch(self.fd, os.fsencode(directory), _WATCH_MASK)
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), directory)
        return int(wd)

    def rm_watch(self, wd: int) -> None:
        self._rm_watch(self.fd, wd)  # a watch the kernel dropped already: nothing to do

    def read(self) -> bytes:
        try:
            return os.read(self.fd, 64 * 1024)
        except BlockingIOError:
            return b""

    def close(self) -> None:
        os.close(self.fd)


def nearest_existing(directory: str) -> str:
    """`directory` or its nearest ancestor that exists as a directory ("/" at worst)."""
    while not os.path.isdir(directory):
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return directory


def next_below(watched: str, target: str) -> str:
    """The name of the directory below `watched` on the way to `target`."""
    rest = os.path.relpath(target, watched)
    return rest.split(os.sep, 1)[0]


class SocketWatcher:
    """Wakes a waiter when the socket's name appears or changes in its directory.

    Lives for one outage: create it at the first failed dial, close() it once a dial
    succeeds. While the socket's directory does not exist, its nearest existing ancestor
    is watched and the watch moves down as directories appear (a waiter is woken only
    once the socket's own directory is watched). Falls back to plain polling where
    inotify is unavailable."""

    def __init__(self, socket_path: str, loop: asyncio.AbstractEventLoop) -> None:
        self._directory = os.path.dirname(os.path.abspath(socket_path))
        self._name = os.path.basename(socket_path)
        self._loop = loop
        self._changed = asyncio.Event()
        self._inotify: _Inotify | None = None
        self._watched: str | None = None  # the directory under watch now
        self._wd = -1
        try:
            self._inotify = _Inotify()
        except (OSError, AttributeError):  # no inotify (not Linux, or no fds left): poll
            return
        loop.add_reader(self._inotify.fd, self._on_readable)
        self._arm()

    @property
    def active(self) -> bool:
        """Whether inotify is watching (the socket's directory, or an ancestor on its way)."""
        return self._watched is not None

    @property
    def watching_socket_dir(self) -> bool:
        return self._watched == self._directory

    def _arm(self) -> None:
        if self._inotify is None or self.watching_socket_dir:
            return
        target = nearest_existing(self._directory)
        if target == self._watched:
            return
        try:
            wd = self._inotify.add_watch(target)
        except OSError:  # vanished between the look and the watch: try again next wait
            return
        if self._watched is not None and wd != self._wd:
            self._inotify.rm_watch(self._wd)
        self._watched, self._wd = target, wd
        if target == self._directory:
            # The socket may have appeared between the failed dial and this watch.
            self._changed.set()

    def _on_readable(self) -> None:
        assert self._inotify is not None
        names, ended = names_in_events(self._inotify.read())
        if ended:
            self._watched = None  # the watched directory went: find the nearest again
            self._arm()
            return
        if self.watching_socket_dir:
            if self._name in names:
                self._changed.set()
        elif self._watched is not None and next_below(self._watched, self._directory) in names:
            self._arm()  # one level closer; woken once the socket's own directory is watched

    async def wait(self, timeout: float) -> bool:
        """Wait until the socket's name changed since the previous wait (or since the
        watch began), or `timeout` passes; True on a change."""
        self._arm()
        try:
            if not self._changed.is_set():
                await asyncio.wait_for(self._changed.wait(), timeout)
        except TimeoutError:
            return False
        self._changed.clear()
        return True

    def close(self) -> None:
        if self._inotify is not None:
            self._loop.remove_reader(self._inotify.fd)
            self._inotify.close()
            self._inotify = None
        self._watched = None
