"""Cgroup version detection: pure v1, pure v2, or hybrid, and where each controller lives."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import structlog

from system.errors import NotSupported
from system.host import Host
from system.mountinfo import read_cgroup_mounts

log = structlog.get_logger(__name__)

# v1 controller directory name -> the v2 controller that replaces it (None: no v2 twin).
V1_TO_V2_CONTROLLER: Mapping[str, str | None] = {
    "cpu": "cpu",
    "cpuacct": "cpu",
    "cpuset": "cpuset",
    "memory": "memory",
    "blkio": "io",
    "pids": "pids",
    "hugetlb": "hugetlb",
    "net_cls": None,
    "net_prio": None,
    "devices": None,
    "freezer": None,
    "perf_event": "perf_event",
    "rdma": "rdma",
    "misc": "misc",
}

# a file that every mounted v1 hierarchy of that controller has at its root
_V1_MARKERS: Mapping[str, str] = {
    "cpu": "cpu.shares",
    "cpuacct": "cpuacct.usage",
    "cpuset": "cpuset.cpus",
    "memory": "memory.usage_in_bytes",
    "blkio": "blkio.throttle.read_bps_device",
    "pids": "cgroup.procs",
    "hugetlb": "cgroup.procs",
    "net_cls": "net_cls.classid",
    "net_prio": "cgroup.procs",
    "devices": "devices.list",
    "freezer": "cgroup.procs",
    "perf_event": "cgroup.procs",
    "rdma": "cgroup.procs",
    "misc": "cgroup.procs",
}


class CgroupMode(Enum):
    V1 = "v1"
    V2 = "v2"
    HYBRID = "hybrid"


@dataclass(frozen=True, slots=True)
class CgroupHierarchy:
    """Where each controller lives on one host.

    ``v1_roots`` maps v1 controller dir names to their mount (``<root>/cpu``...);
    ``v2_controllers`` lists what the cgroup2 root offers in ``cgroup.controllers``.
    """

    mode: CgroupMode
    cgroup_root: Path
    unified_root: Path | None
    v1_roots: tuple[tuple[str, Path], ...] = ()
    v2_controllers: frozenset[str] = field(default_factory=frozenset)

    def v1_root(self, subsystem: str) -> Path | None:
        for name, root in self.v1_roots:
            if name == subsystem:
                return root
        return None

    def version_of(self, subsystem: str) -> int:
        """1 when the controller is a mounted v1 hierarchy, 2 when cgroup2 has it.

        A controller found in neither answers with the mode's natural version
        (2 on pure v2, else 1), so that paths can still be built and checked.
        """
        if self.v1_root(subsystem) is not None:
            return 1
        v2_name = V1_TO_V2_CONTROLLER.get(subsystem, subsystem)
        if self.unified_root is not None and v2_name in self.v2_controllers:
            return 2
        return 2 if self.mode is CgroupMode.V2 else 1

    def controller_root(self, subsystem: str) -> Path | None:
        """The directory holding this controller's root cgroup, or None when absent."""
        root = self.v1_root(subsystem)
        if root is not None:
            return root
        v2_name = V1_TO_V2_CONTROLLER.get(subsystem, subsystem)
        if self.unified_root is not None and v2_name in self.v2_controllers:
            return self.unified_root
        return None

    def has_controller(self, subsystem: str) -> bool:
        return self.controller_root(subsystem) is not None

    def describe(self) -> Mapping[str, str]:
        """controller -> "v1:<path>" / "v2:<path>" for logs and docs."""
        out: dict[str, str] = {}
        for name, root in self.v1_roots:
            out[name] = "v1:%s" % root
        if self.unified_root is not None:
            for name in sorted(self.v2_controllers):
                out.setdefault(name, "v2:%s" % self.unified_root)
        return out


def _read_words(path: Path) -> frozenset[str]:
    try:
        return frozenset(path.read_text().split())
    except OSError:
        return frozenset()


def _v1_mounts(host: Host, root: Path) -> list[tuple[str, Path]]:
    """v1 controller -> mount dir, from marker files, combined dir names and mountinfo."""
    v1: list[tuple[str, Path]] = []
    found: set[str] = set()

    def take(name: str, directory: Path) -> None:
        marker = _V1_MARKERS.get(name)
        if name not in found and marker and (directory / marker).is_file():
            v1.append((name, directory))
            found.add(name)

    for name in _V1_MARKERS:
        take(name, root / name)
    # combined mounts without per-controller symlinks, e.g. "cpu,cpuacct"
    for directory in sorted(p for p in root.iterdir() if "," in p.name and p.is_dir()):
        for name in directory.name.split(","):
            take(name, directory)
    # last resort: mountinfo names v1 mounts under this root with unusual dir names
    for mount in read_cgroup_mounts(host):
        point = Path(mount.mount_point)
        if mount.version == 1 and point.parent == root:
            for name in sorted(mount.controllers):
                take(name, point)
    return v1


def detect_hierarchy(host: Host) -> CgroupHierarchy:
    """Detect the cgroup layout from the files under ``host.cgroup_root``.

    - V2: the root itself is a cgroup2 mount (has ``cgroup.controllers``).
    - HYBRID: v1 controller mounts plus a cgroup2 mount at ``<root>/unified``.
    - V1: only v1 controller mounts.
    Combined mounts such as ``cpu,cpuacct`` are found through their symlinks or their
    combined name; other oddly named v1 mounts through ``<proc_root>/self/mountinfo``.
    """
    root = host.cgroup_root
    if not root.is_dir():
        raise NotSupported("no cgroup hierarchy found", root)
    try:
        if (root / "cgroup.controllers").is_file():
            log.debug("cgroup_mode_detected", mode="v2", root=str(root))
            return CgroupHierarchy(
                mode=CgroupMode.V2,
                cgroup_root=root,
                unified_root=root,
                v2_controllers=_read_words(root / "cgroup.controllers"),
            )
        v1 = _v1_mounts(host, root)
        unified = root / "unified"
        unified_root = unified if (unified / "cgroup.procs").is_file() else None
        controllers = (
            _read_words(unified / "cgroup.controllers") if unified_root else frozenset()
        )
    except OSError as exc:  # an unreadable root: nothing can be supported
        raise NotSupported("cannot inspect cgroup root: %s" % exc.strerror, root) from None
    if not v1 and unified_root is None:
        raise NotSupported("no cgroup hierarchy found", root)
    if v1 and unified_root is not None:
        mode = CgroupMode.HYBRID
    else:
        mode = CgroupMode.V1 if v1 else CgroupMode.V2
    log.debug("cgroup_mode_detected", mode=mode.value, root=str(root))
    return CgroupHierarchy(
        mode=mode,
        cgroup_root=root,
        unified_root=unified_root,
        v1_roots=tuple(v1),
        v2_controllers=controllers,
    )


def no_hierarchy(root: Path) -> CgroupHierarchy:
    """The hierarchy of a host without cgroups: no controller anywhere, so every resource
    resolves as NotSupported (an executor over it refuses each write as unsupported)."""
    return CgroupHierarchy(mode=CgroupMode.V1, cgroup_root=root, unified_root=None)
