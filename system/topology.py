"""CPU / NUMA topology from sysfs, as one frozen value (``CpuTopology``).

Sources (Documentation/ABI/stable/sysfs-devices-system-cpu, sysfs-devices-node):
``/sys/devices/system/cpu/{online,cpuN/topology/{core_id,physical_package_id},
cpuN/cache/indexM/{level,type,id,shared_cpu_list}}`` and
``/sys/devices/system/node/{online,nodeN/cpulist,nodeN/meminfo}``.
A kernel without NUMA (no node dir) is one node 0 holding every CPU and MemTotal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from system.cpuset import parse_cpuset
from system.errors import InvalidValue, NotSupported
from system.host import Host
from system.procfs import read_meminfo


@dataclass(frozen=True, slots=True)
class CpuInfo:
    cpu: int
    core: int  # core_id: unique only within its socket (see ``core_key``)
    socket: int
    numa_node: int
    l3_id: int | None  # None: no L3 cache reported

    @property
    def core_key(self) -> tuple[int, int]:
        return (self.socket, self.core)


@dataclass(frozen=True, slots=True)
class NumaNode:
    node: int
    cpus: frozenset[int]
    memory_total_bytes: int
    memory_free_bytes: int = 0
    distances: tuple[tuple[int, int], ...] = ()  # (node, ACPI SLIT distance), this node included


@dataclass(frozen=True, slots=True)
class CpuTopology:
    """Online CPUs with their core/socket/NUMA/L3 and the NUMA nodes' memory."""

    cpus: tuple[CpuInfo, ...]
    numa_nodes: tuple[NumaNode, ...]

    @property
    def online_cpus(self) -> frozenset[int]:
        return frozenset(info.cpu for info in self.cpus)

    @property
    def sockets(self) -> tuple[int, ...]:
        return tuple(sorted({info.socket for info in self.cpus}))

    @property
    def num_cores(self) -> int:
        return len({info.core_key for info in self.cpus})

    @property
    def threads_per_core(self) -> int:
        cores = self.num_cores
        return len(self.cpus) // cores if cores else 0

    def info(self, cpu: int) -> CpuInfo:
        for info in self.cpus:
            if info.cpu == cpu:
                return info
        raise InvalidValue("cpu %d is not online" % cpu)

    def cpus_where(self, **attrs: int) -> frozenset[int]:
        """CPUs whose fields equal ``attrs``, e.g. ``cpus_where(numa_node=1)``."""
        return frozenset(
            info.cpu for info in self.cpus
            if all(getattr(info, key) == value for key, value in attrs.items())
        )

    def siblings(self, cpu: int) -> frozenset[int]:
        """Hyperthreads sharing ``cpu``'s physical core (itself included)."""
        key = self.info(cpu).core_key
        return frozenset(info.cpu for info in self.cpus if info.core_key == key)

    def numa_memory(self) -> Mapping[int, int]:
        return MappingProxyType({n.node: n.memory_total_bytes for n in self.numa_nodes})


# ------------------------------------------------------------------ pure helpers

def parse_node_meminfo(text: str) -> tuple[int, int]:
    """(MemTotal, MemFree) in bytes from a node's meminfo ("Node 0 MemTotal:  123 kB")."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 4 and words[0] == "Node" and words[2].endswith(":"):
            try:
                number = int(words[3])
            except ValueError:
                raise InvalidValue("bad node meminfo line %r" % line) from None
            if len(words) > 4 and words[4] == "kB":
                number *= 1024
            values[words[2][:-1]] = number
    if "MemTotal" not in values:
        raise InvalidValue("node meminfo lacks MemTotal")
    return values["MemTotal"], values.get("MemFree", 0)


def parse_node_distances(text: str, online_nodes: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """nodeN/distance: one distance per online node, in node order (the kernel walks the
    online nodes); () when the counts disagree, as distances are only a hint to schedulers."""
    try:
        values = [int(word) for word in text.split()]
    except ValueError:
        return ()
    if len(values) != len(online_nodes):
        return ()
    return tuple(zip(online_nodes, values))


# ------------------------------------------------------------------ IO shell

def _text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise NotSupported("missing sysfs file", path) from None
    except OSError as exc:
        raise NotSupported("unreadable sysfs file: %s" % exc.strerror, path) from None


def _int(path: Path) -> int:
    text = _text(path)
    try:
        return int(text)
    except ValueError:
        raise InvalidValue("not an integer: %r" % text, path) from None


def _l3_id(cpu_dir: Path) -> int | None:
    cache = cpu_dir / "cache"
    if not cache.is_dir():
        return None
    for index in sorted(cache.glob("index*")):
        try:
            if _int(index / "level") != 3 or _text(index / "type") == "Instruction":
                continue
        except NotSupported:
            continue
        if (index / "id").is_file():
            return _int(index / "id")
        shared = parse_cpuset(_text(index / "shared_cpu_list"))
        return min(shared) if shared else None
    return None


def read_online_cpus(host: Host) -> frozenset[int]:
    """The online CPUs (``/sys/devices/system/cpu/online``) without the rest of the topology."""
    return parse_cpuset(_text(host.sys("devices", "system", "cpu", "online")))


def read_cpu_topology(host: Host) -> CpuTopology:
    """Build the frozen topology value from sysfs (and /proc/meminfo without NUMA)."""
    cpu_root = host.sys("devices", "system", "cpu")
    node_root = host.sys("devices", "system", "node")
    online = read_online_cpus(host)
    node_of: dict[int, int] = {}
    nodes: list[NumaNode] = []
    if (node_root / "online").is_file():
        online_nodes = sorted(parse_cpuset(_text(node_root / "online")))
        for node in online_nodes:
            node_dir = node_root / ("node%d" % node)
            cpus = parse_cpuset(_text(node_dir / "cpulist"))
            total, free = parse_node_meminfo(_text(node_dir / "meminfo"))
            distance = node_dir / "distance"
            distances = parse_node_distances(_text(distance), online_nodes) if distance.is_file() else ()
            nodes.append(NumaNode(node, cpus & online, total, free, distances))
            for cpu in cpus:
                node_of[cpu] = node
    else:
        meminfo = read_meminfo(host)
        nodes.append(NumaNode(0, online, meminfo.total_bytes, meminfo.free_bytes))
    infos = []
    for cpu in sorted(online):
        cpu_dir = cpu_root / ("cpu%d" % cpu)
        topo = cpu_dir / "topology"
        infos.append(
            CpuInfo(
                cpu=cpu,
                core=_int(topo / "core_id"),
                socket=max(0, _int(topo / "physical_package_id")),
                numa_node=node_of.get(cpu, 0),
                l3_id=_l3_id(cpu_dir),
            )
        )
    return CpuTopology(tuple(infos), tuple(nodes))
