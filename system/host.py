"""The host's kernel-file roots, movable to a fake tree for tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Host:
    """Where the kernel's cgroup, proc and sys trees are mounted.

    The same code runs on the real host (defaults) and on a tmp tree (tests): every kernel
    path in the system package is built from one of these roots.
    """

    cgroup_root: Path = Path("/sys/fs/cgroup")
    proc_root: Path = Path("/proc")
    sys_root: Path = Path("/sys")

    def __post_init__(self) -> None:
        # flags arrive as strings (--cgroup-root-dir=/host/sys/fs/cgroup): hold Paths
        for name in ("cgroup_root", "proc_root", "sys_root"):
            value = getattr(self, name)
            if not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))

    @classmethod
    def under(cls, root: Path | str) -> "Host":
        """A host whose trees all live below ``root`` (``root/sys/fs/cgroup``, ``root/proc``...)."""
        base = Path(root)
        return cls(
            cgroup_root=base / "sys" / "fs" / "cgroup",
            proc_root=base / "proc",
            sys_root=base / "sys",
        )

    def proc(self, *parts: str) -> Path:
        return self.proc_root.joinpath(*parts)

    def sys(self, *parts: str) -> Path:
        return self.sys_root.joinpath(*parts)

    def cgroup(self, *parts: str) -> Path:
        return self.cgroup_root.joinpath(*parts)
