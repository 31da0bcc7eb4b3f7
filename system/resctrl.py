"""resctrl (Intel RDT / AMD QoS) detection and the schemata line format.

Documentation/arch/x86/resctrl.rst: mounted at /sys/fs/resctrl; ``info/L3/{cbm_mask,
min_cbm_bits,num_closids,shareable_bits}``, ``info/MB/{min_bandwidth,bandwidth_gran,
num_closids,delay_linear}``; schemata lines look like ``L3:0=fff;1=fff`` and ``MB:0=100;1=100``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from system.errors import InvalidValue, classify_os_error
from system.host import Host

RESCTRL_FLAGS = frozenset({"rdt_a", "cat_l3", "cdp_l3", "mba", "cqm_llc", "cqm_occup_llc"})


@dataclass(frozen=True, slots=True)
class L3Cat:
    cbm_mask: int
    min_cbm_bits: int
    num_closids: int

    @property
    def ways(self) -> int:
        return bin(self.cbm_mask).count("1")


@dataclass(frozen=True, slots=True)
class Mba:
    min_bandwidth: int
    bandwidth_gran: int
    num_closids: int
    delay_linear: bool


@dataclass(frozen=True, slots=True)
class ResctrlInfo:
    kernel_supports: bool  # "resctrl" in /proc/filesystems
    mounted: bool
    cpu_flags: frozenset[str]  # the RDT-related flags /proc/cpuinfo shows
    l3: L3Cat | None = None
    mba: Mba | None = None

    @property
    def usable(self) -> bool:
        return self.mounted and (self.l3 is not None or self.mba is not None)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _int_file(path: Path, base: int = 10) -> int | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return int(text.strip(), base)
    except ValueError:
        raise InvalidValue("bad resctrl info value %r" % text, path) from None


def detect_resctrl(host: Host) -> ResctrlInfo:
    """Report what resctrl this host offers; never raises for an absent feature."""
    filesystems = _read(host.proc("filesystems")) or ""
    kernel = any(line.split()[-1:] == ["resctrl"] for line in filesystems.splitlines())
    cpuinfo = _read(host.proc("cpuinfo")) or ""
    flags: frozenset[str] = frozenset()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = frozenset(line.partition(":")[2].split()) & RESCTRL_FLAGS
            break
    root = host.sys("fs", "resctrl")
    mounted = (root / "schemata").is_file()
    l3 = mba = None
    if mounted:
        info = root / "info"
        cbm = _int_file(info / "L3" / "cbm_mask", 16)
        if cbm is not None:
            l3 = L3Cat(cbm, _int_file(info / "L3" / "min_cbm_bits") or 1,
                       _int_file(info / "L3" / "num_closids") or 0)
        min_bw = _int_file(info / "MB" / "min_bandwidth")
        if min_bw is not None:
            mba = Mba(min_bw, _int_file(info / "MB" / "bandwidth_gran") or 1,
                      _int_file(info / "MB" / "num_closids") or 0,
                      (_int_file(info / "MB" / "delay_linear") or 0) == 1)
    return ResctrlInfo(kernel, mounted, flags, l3, mba)


def parse_schemata(text: str) -> Mapping[str, Mapping[int, str]]:
    """"L3:0=fff;1=fff" lines -> {"L3": {0: "fff", 1: "fff"}} (values kept as text)."""
    out: dict[str, Mapping[int, str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        name, colon, body = line.partition(":")
        if not colon or not name.strip():
            raise InvalidValue("bad schemata line %r" % line)
        domains: dict[int, str] = {}
        for item in body.split(";"):
            key, eq, value = item.strip().partition("=")
            if not eq or not key.strip().isdigit() or not value.strip():
                raise InvalidValue("bad schemata item %r" % item)
            domains[int(key)] = value.strip()
        out[name.strip()] = MappingProxyType(domains)
    return MappingProxyType(out)


def format_schemata(schemata: Mapping[str, Mapping[int, str]]) -> str:
    return "".join(
        "%s:%s\n" % (name, ";".join("%d=%s" % (k, v) for k, v in sorted(domains.items())))
        for name, domains in schemata.items()
    )


def resctrl_group_dir(host: Host, group: str = "") -> Path:
    """/sys/fs/resctrl for the root group, /sys/fs/resctrl/<group> otherwise."""
    root = host.sys("fs", "resctrl")
    if group and ("/" in group or group in (".", "..", "info", "mon_groups", "mon_data")):
        raise InvalidValue("bad resctrl group name %r" % group)
    return root / group if group else root


def read_schemata(host: Host, group: str = "") -> Mapping[str, Mapping[int, str]]:
    """The group's schemata; Gone when the group does not exist."""
    path = resctrl_group_dir(host, group) / "schemata"
    try:
        text = path.read_text()
    except OSError as exc:
        raise classify_os_error(exc, path, path.parent) from None
    return parse_schemata(text)


def read_tasks(host: Host, group: str = "") -> frozenset[int]:
    path = resctrl_group_dir(host, group) / "tasks"
    try:
        text = path.read_text()
    except OSError as exc:
        raise classify_os_error(exc, path, path.parent) from None
    return frozenset(int(word) for word in text.split())
