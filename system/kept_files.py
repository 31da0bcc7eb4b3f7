"""The readers' name for the shared kept-fd pool (system.file_io.KeptFdPool).

Kept for the callers that use it; there is one pool implementation and one eviction
rule. Hand the same pool to readers and the executor to keep one fd budget."""

from __future__ import annotations

import os

from system.file_io import KeptFdPool

DEFAULT_MAX_OPEN = 2048


class KeptFiles(KeptFdPool):
    """A KeptFdPool with the readers' method names."""

    def __init__(self, max_open: int = DEFAULT_MAX_OPEN) -> None:
        super().__init__(max(1, max_open))

    def read_text(self, path: str | os.PathLike[str]) -> str:
        return self.read(os.fspath(path))

    def drop(self, path: str | os.PathLike[str]) -> None:
        self.release_file(os.fspath(path))

    def drop_under(self, directory: str | os.PathLike[str]) -> int:
        return self.release(directory)
