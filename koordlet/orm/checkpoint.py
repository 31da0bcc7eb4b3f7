"""The ORM checkpoint: every allocation, written atomically with a checksum.

Format (JSON): {"version": 1, "data": {"entries": [Allocation.to_json()...]},
"checksum": sha256 of the canonical JSON of "data"}. Written by util.durable.write_atomically, so a crash leaves the old or the new file, never
half. A file that does not verify (or a directory in its place) is moved aside
(<name>.corrupt-<unix time ns>, the newest few kept) and reported; it is never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path

import structlog

from koordlet.orm.allocation import Allocation, canonical_json
from koordlet.util.durable import move_aside, write_atomically
from system.errors import InvalidValue

log = structlog.get_logger(__name__)

CHECKPOINT_NAME = "orm_checkpoint"
VERSION = 1


class CorruptCheckpoint(Exception):
    """The checkpoint exists but cannot be trusted; the message says why."""


def _canonical(data: object) -> bytes:
    return canonical_json(data).encode()


def encode_rows(rows: Iterable[str]) -> bytes:
    """The document from rows already in canonical JSON: the bytes json.dumps(sort_keys=True,
    compact) gives for the whole document, built by joining (keys sort checksum, data, version)."""
    data = ('{"entries":[' + ",".join(rows) + "]}").encode()
    checksum = hashlib.sha256(data).hexdigest()
    return b'{"checksum":"' + checksum.encode() + b'","data":' + data + b',"version":%d}' % VERSION


def encode(entries: Iterable[Allocation]) -> bytes:
    return encode_rows(canonical_json(entry.to_json()) for entry in entries)


def decode(blob: bytes) -> tuple[Allocation, ...]:
    """Verify and parse; CorruptCheckpoint on any defect."""
    try:
        document = json.loads(blob)
    except ValueError as exc:
        raise CorruptCheckpoint("not JSON: %s" % exc) from None
    if not isinstance(document, dict) or not isinstance(document.get("data"), dict):
        raise CorruptCheckpoint("not a checkpoint document")
    if document.get("version") != VERSION:
        raise CorruptCheckpoint("unknown version %r" % (document.get("version"),))
    if hashlib.sha256(_canonical(document["data"])).hexdigest() != document.get("checksum"):
        raise CorruptCheckpoint("checksum mismatch")
    entries = document["data"].get("entries")
    if not isinstance(entries, list):
        raise CorruptCheckpoint("entries is not a list")
    try:
        return tuple(Allocation.from_json(entry) for entry in entries)
    except (KeyError, TypeError, ValueError, AttributeError, InvalidValue) as exc:
        raise CorruptCheckpoint("bad entry: %r" % (exc,)) from None


class CheckpointStore:
    def __init__(self, directory: Path, name: str = CHECKPOINT_NAME) -> None:
        self.directory = directory
        self.path = directory / name
        # Writes come from the loop (synchronous admissions) and from a worker thread; each
        # carries the table generation it snapshotted, and an older one never replaces a newer.
        self._write_lock = threading.Lock()
        self._written_generation = -1
        self._durable_generation = -1  # the newest generation whose write has completed
        self.write_error: str | None = None  # why the last write failed (a full disk...), None once one works

    @property
    def durable_generation(self) -> int:
        return self._durable_generation

    def write(self, entries: Iterable[Allocation]) -> None:
        self.write_blob(encode(entries))

    def write_blob(self, blob: bytes, generation: int | None = None) -> bool:
        """Write `blob` durably; False (nothing written) when a newer generation is already on disk."""
        with self._write_lock:
            previous = self._written_generation
            if generation is not None:
                if generation <= self._written_generation:
                    return False
                self._written_generation = generation
            try:
                self._write(blob)
            except OSError as exc:
                self._written_generation = previous  # not on disk: a later write may try again
                if self.write_error is None:
                    log.error("orm_checkpoint_write_failed", path=str(self.path), error=exc.strerror or str(exc))
                self.write_error = "checkpoint %s: %s" % (self.path, exc.strerror or exc)
                raise
            if self.write_error is not None:
                log.info("orm_checkpoint_write_recovered", path=str(self.path))
                self.write_error = None
            if generation is not None:
                self._durable_generation = generation
            return True

    def _write(self, blob: bytes) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomically(self.path, blob)

    def load(self) -> tuple[Allocation, ...]:
        """The checkpointed allocations; () when there is none, or when what is there is not
        a checkpoint (a directory, a corrupt file: moved aside). A file that exists but cannot
        be read (permissions, IO) raises OSError: the caller decides (it is kept)."""
        if os.path.lexists(self.path) and not self.path.is_file():
            aside = move_aside(self.path)
            log.error("orm_checkpoint_corrupt", path=str(self.path), moved_to=str(aside),
                      reason="not a regular file")
            return ()
        try:
            blob = self.path.read_bytes()
        except FileNotFoundError:
            return ()
        try:
            entries = decode(blob)
        except CorruptCheckpoint as exc:
            aside = move_aside(self.path)
            log.error("orm_checkpoint_corrupt", path=str(self.path), moved_to=str(aside), reason=str(exc))
            return ()
        log.info("orm_checkpoint_loaded", path=str(self.path), entries=len(entries))
        return entries
