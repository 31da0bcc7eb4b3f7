"""A plugin's registration identity (name + two-digit index) and its validation.

Rules from protocols.md §2.4: the index is exactly two ASCII digits; the name
must not be empty and, from NRI 0.12, may only use [A-Za-z0-9_.+-]. A launched
plugin learns both from NRI_PLUGIN_NAME / NRI_PLUGIN_IDX (or its `NN-name`
file name).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Mapping

from nri.stub.errors import InvalidIdentity

NAME_ENV = "NRI_PLUGIN_NAME"
INDEX_ENV = "NRI_PLUGIN_IDX"
SOCKET_ENV = "NRI_PLUGIN_SOCKET"

_INDEX_RE = re.compile(r"^[0-9]{2}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")
_FILE_RE = re.compile(r"^([0-9]{2})-(.+)$")


def index_problem(index: str) -> str | None:
    if not _INDEX_RE.fullmatch(index):
        return "plugin index must be exactly two digits, got " + repr(index)
    return None


def name_problem(name: str, strict_charset: bool = True) -> str | None:
    if not name:
        return "plugin name must not be empty"
    if strict_charset and not _NAME_RE.fullmatch(name):
        return "plugin name may only contain [A-Za-z0-9_.+-], got " + repr(name)
    return None


@dataclass(frozen=True, slots=True)
class PluginIdentity:
    """Validated on construction: a bad name or index never leaves here."""

    name: str
    index: str

    def __post_init__(self) -> None:
        problem = name_problem(self.name) or index_problem(self.index)
        if problem is not None:
            raise InvalidIdentity(problem)

    @property
    def full_name(self) -> str:
        return self.index + "-" + self.name

    @classmethod
    def from_file_name(cls, file_name: str) -> PluginIdentity:
        match = _FILE_RE.fullmatch(file_name)
        if match is None:
            raise InvalidIdentity("plugin file name must look like NN-name, got " + repr(file_name))
        return cls(name=match.group(2), index=match.group(1))


def resolve_identity(
    name: str | None, index: str | None, environ: Mapping[str, str], program: str = ""
) -> PluginIdentity:
    """Explicit name/index win; then the runtime-provided environment; then the
    program's file name when it looks like `NN-name` (how containerd names
    launched plugins)."""
    resolved_name = name if name is not None else environ.get(NAME_ENV, "")
    resolved_index = index if index is not None else environ.get(INDEX_ENV, "")
    if (not resolved_name or not resolved_index) and program:
        match = _FILE_RE.fullmatch(os.path.basename(program))
        if match is not None:
            resolved_index = resolved_index or match.group(1)
            resolved_name = resolved_name or match.group(2)
    return PluginIdentity(name=resolved_name, index=resolved_index)


def launched_socket_fd(environ: Mapping[str, str]) -> int | None:
    """The pre-connected trunk fd when the runtime launched us (NRI_PLUGIN_SOCKET)."""
    raw = environ.get(SOCKET_ENV)
    if raw is None or raw == "":
        return None
    try:
        fd = int(raw)
    except ValueError as exc:
        raise InvalidIdentity("invalid %s=%r" % (SOCKET_ENV, raw)) from exc
    if fd < 0:
        raise InvalidIdentity("invalid %s=%r" % (SOCKET_ENV, raw))
    return fd
