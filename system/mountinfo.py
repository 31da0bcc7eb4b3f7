"""cgroup mounts from /proc/self/mountinfo (Documentation/filesystems/proc.rst §3.5).

Line: ``ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS``;
a v1 cgroup mount names its controllers in SUPER_OPTIONS ("rw,cpu,cpuacct"). Mount points
escape space, tab, newline and backslash as octal (``\\040``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from system.errors import InvalidValue
from system.host import Host

# super options that are not controller names
_NOT_CONTROLLERS = frozenset(
    {"rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec", "xattr", "clone_children",
     "noprefix", "cpuset_v2_mode", "nsdelegate", "memory_recursiveprot", "favordynmods"}
)
_OCTAL = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True, slots=True)
class CgroupMount:
    mount_point: str
    version: int  # 1 (fstype cgroup) or 2 (cgroup2)
    controllers: frozenset[str]  # v1: cpu, cpuacct, name=systemd ...; v2: empty
    root: str  # the cgroup seen as this mount's root ("/" unless in a cgroup namespace)


def _unescape(text: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), text)


def parse_cgroup_mounts(text: str) -> tuple[CgroupMount, ...]:
    mounts = []
    for line in text.splitlines():
        if not line.strip():
            continue
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 6 or len(tail) < 3:
            raise InvalidValue("bad mountinfo line %r" % line)
        fstype = tail[0]
        if fstype not in ("cgroup", "cgroup2"):
            continue
        controllers: frozenset[str] = frozenset()
        if fstype == "cgroup":
            controllers = frozenset(
                opt for opt in tail[2].split(",") if opt and opt not in _NOT_CONTROLLERS
            )
        mounts.append(
            CgroupMount(_unescape(fields[4]), 2 if fstype == "cgroup2" else 1, controllers,
                        _unescape(fields[3]))
        )
    return tuple(mounts)


def read_cgroup_mounts(host: Host) -> tuple[CgroupMount, ...]:
    """The cgroup mounts this process sees; empty when mountinfo is unreadable."""
    try:
        text = host.proc("self", "mountinfo").read_text()
    except OSError:
        return ()
    return parse_cgroup_mounts(text)
