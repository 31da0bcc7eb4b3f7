"""The registry's shell for cgroup files: locate, check support, read and parse.

Writes go through the executor (resourceexecutor), bytes through system.file_io.

A cgroup is named by its directory relative to the hierarchy root ("kubepods/burstable/
pod<uid>/<cid>", "" for the root); the same name serves v1 and v2. Where the file lives is
decided by the resource table and the detected hierarchy, never by callers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from system.cgroup_resource import CgroupResource, SupportCheck, get_resource
from system.cgroup_version import (
    V1_TO_V2_CONTROLLER,
    CgroupHierarchy,
    CgroupMode,
    detect_hierarchy,
)
from system.errors import InvalidValue, NotSupported, classify_os_error
from system.file_io import READ_CHUNK, read_fd_text, read_path_text  # noqa: F401  (old home)
from system.host import Host

# cgroup2 files every cgroup has, whichever controllers are enabled
V2_CORE_FILES = frozenset(
    {"cgroup.procs", "cgroup.threads", "cpu.stat", "cpu.pressure", "memory.pressure",
     "io.pressure", "cgroup.kill"}
)



def clean_cgroup_dir(cgroup_dir: str) -> str:
    """Normalise a relative cgroup dir ("/a/b/" -> "a/b"); InvalidValue for ".." or NUL."""
    if "." not in cgroup_dir and "//" not in cgroup_dir and "\x00" not in cgroup_dir:
        return cgroup_dir.strip("/")  # common case: nothing to normalise
    text = cgroup_dir.strip("/")
    if "\x00" in text:
        raise InvalidValue("NUL in cgroup dir %r" % cgroup_dir)
    parts = [p for p in text.split("/") if p and p != "."]
    if any(p == ".." for p in parts):
        raise InvalidValue("'..' in cgroup dir %r" % cgroup_dir)
    return "/".join(parts)


def join_file(root: str, rel: str, name: str) -> str:
    """The path of file `name` of cgroup `rel` ("" for the root) under hierarchy `root`."""
    return ("%s/%s/%s" % (root, rel, name)) if rel else ("%s/%s" % (root, name))


class CgroupFiles:
    """Typed access to cgroup files on one host (real or fake tree)."""

    def __init__(self, host: Host, hierarchy: CgroupHierarchy | None = None) -> None:
        self.host = host
        self.hierarchy = hierarchy if hierarchy is not None else detect_hierarchy(host)
        # resource name -> (version, root as str, file name): fixed for a given hierarchy
        self._located: dict[str, tuple[int, str, str]] = {}

    def resolve(self, resource: str | CgroupResource, cgroup_dir: str) -> tuple[int, str, str]:
        """(version, clean cgroup dir, file path as str): the hot-path form of `path`,
        for callers that keep paths as strings (the executor's updaters, readers).
        NotSupported where the resource has no file here, InvalidValue for a bad dir."""
        version, rel, root, name = self.resolve_parts(resource, cgroup_dir)
        return version, rel, join_file(root, rel, name)

    def resolve_parts(self, resource: str | CgroupResource, cgroup_dir: str) -> tuple[int, str, str, str]:
        """(version, clean cgroup dir, hierarchy root, file name), each a str shared by every
        cgroup's file of this resource: `join_file` makes the path. For holders of thousands
        of paths that need them only now and then (the executor's updaters)."""
        res = get_resource(resource)
        hit = self._located.get(res.name)
        if hit is None:
            version, root_path = self.locate(res)
            name = res.v1_file if version == 1 else res.v2_file
            assert name is not None  # locate() only answers versions with a file
            hit = self._located[res.name] = (version, str(root_path), name)
        version, root, name = hit
        return version, clean_cgroup_dir(cgroup_dir), root, name

    def _file(self, res: CgroupResource, cgroup_dir: str) -> tuple[int, str]:
        version, _, path = self.resolve(res, cgroup_dir)
        return version, path

    # ------------------------------------------------------------ locating

    def locate(self, resource: str | CgroupResource) -> tuple[int, Path]:
        """(version, hierarchy root) that serves this resource here; NotSupported if none."""
        res = get_resource(resource)
        h = self.hierarchy
        if h.unified_root is not None and res.v2_file is not None:
            v1_root = h.v1_root(res.subsystem) if res.v1_file is not None else None
            if h.mode is CgroupMode.V2 or res.prefer_unified or v1_root is None:
                return 2, h.unified_root
        v1_root = h.v1_root(res.subsystem)
        if v1_root is not None and res.v1_file is not None:
            return 1, v1_root
        raise NotSupported(
            "%s has no file on this host (%s)" % (res.name, h.mode.value), h.cgroup_root
        )

    def version_for(self, resource: str | CgroupResource) -> int:
        return self.locate(resource)[0]

    def dir_path(self, resource: str | CgroupResource, cgroup_dir: str) -> Path:
        _, root = self.locate(resource)
        rel = clean_cgroup_dir(cgroup_dir)
        return root / rel if rel else root

    def path(self, resource: str | CgroupResource, cgroup_dir: str) -> Path:
        res = get_resource(resource)
        version, root = self.locate(res)
        rel = clean_cgroup_dir(cgroup_dir)
        name = res.file(version)
        assert name is not None  # locate() only answers versions with a file
        return (root / rel / name) if rel else (root / name)

    def subsystem_dir(self, subsystem: str, cgroup_dir: str) -> Path:
        """The directory of a cgroup in one controller's hierarchy (unified on v2)."""
        root = self.hierarchy.controller_root(subsystem)
        if root is None:
            if self.hierarchy.mode is not CgroupMode.V1 and self.hierarchy.unified_root:
                root = self.hierarchy.unified_root
            else:
                raise NotSupported("controller %s is not mounted" % subsystem)
        rel = clean_cgroup_dir(cgroup_dir)
        return root / rel if rel else root

    def exists(self, cgroup_dir: str, subsystem: str = "cpu") -> bool:
        try:
            return self.subsystem_dir(subsystem, cgroup_dir).is_dir()
        except NotSupported:
            return False

    def children(self, cgroup_dir: str, subsystem: str = "cpu") -> tuple[str, ...]:
        """Relative dirs of the direct child cgroups, sorted; Gone if the cgroup vanished."""
        directory = self.subsystem_dir(subsystem, cgroup_dir)
        try:
            names = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
        except OSError as exc:
            raise classify_os_error(exc, directory, directory) from None
        rel = clean_cgroup_dir(cgroup_dir)
        return tuple("%s/%s" % (rel, name) if rel else name for name in names)

    def supported(self, resource: str | CgroupResource, cgroup_dir: str = "") -> bool:
        """Whether this host offers the resource (for FILE_EXISTS resources: in ``cgroup_dir``)."""
        try:
            res = get_resource(resource)
            version, _ = self.locate(res)
            path = self.path(res, cgroup_dir)
        except (NotSupported, InvalidValue):
            return False
        v2_file = res.v2_file or ""
        if version == 2 and v2_file not in V2_CORE_FILES:
            controller = V1_TO_V2_CONTROLLER.get(res.subsystem, res.subsystem)
            if controller not in self.hierarchy.v2_controllers:
                return False
        if res.support is SupportCheck.FILE_EXISTS:
            return path.is_file()
        return True

    # ------------------------------------------------------------ reading

    def read_text(self, resource: str | CgroupResource, cgroup_dir: str) -> str:
        return read_path_text(self._file(get_resource(resource), cgroup_dir)[1]).strip()

    def read(self, resource: str | CgroupResource, cgroup_dir: str) -> Any:
        res = get_resource(resource)
        version, path = self._file(res, cgroup_dir)
        return res.parse(read_path_text(path).strip(), version)
