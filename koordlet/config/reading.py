"""Reading a file the daemon is told to read (a config file, a NodeSLO document), safely.

The path may hold anything: a FIFO that would block forever, a device, a file far too
large to parse on the event loop, bytes that are not text. `read_text_file` opens without
blocking, insists on a regular file of bounded size, and decodes strict UTF-8; any of those
refused is a `FileRefused` with a reason fit for a log line and an HTTP answer. Blocking
IO: callers on the event loop run it in a worker thread.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class FileRefused(ValueError):
    """The file cannot be used; the message says why (without quoting its content)."""


def read_text_file(path: Path, max_bytes: int) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise FileRefused(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"{path} is not a regular file")
        if info.st_size > max_bytes:
            raise FileRefused(f"{path} is {info.st_size} bytes, more than the {max_bytes} allowed")
        data = os.read(fd, max_bytes + 1)
    except OSError as exc:
        raise FileRefused(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew between the stat and the read
        raise FileRefused(f"{path} is more than the {max_bytes} bytes allowed")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(f"{path} is not UTF-8 text (byte {exc.start})") from None


def bounded(text: str, limit: int = 240) -> str:
    """At most `limit` characters of `text` (what input may put in a log line or an answer)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
