"""The declarative cgroup resource table: one frozen object per resource, written once.

Each resource names its v1 controller + file and its v2 file (or None), how to validate a
canonical value, how to turn it into each version's text and back, and how to tell whether
this host supports it. Every caller goes through this table; no ``if v2:`` elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

from system.cgroup_codecs import (
    BLKIO_WEIGHT_MAX,
    BLKIO_WEIGHT_MIN,
    CPU_SHARES_MAX,
    CPU_SHARES_MIN,
    MAX_INT64,
    UNLIMITED,
    V1_MEMORY_UNLIMITED_FLOOR,
    BlkioAsIoWeight,
    Codec,
    CpuMaxField,
    CpusetCodec,
    CpusetValue,
    DeviceLimitCodec,
    DeviceValue,
    IntCodec,
    IntRange,
    KeyFieldCodec,
    KeyValuesCodec,
    PidListCodec,
    PsiCodec,
    RawCodec,
    ReadOnly,
    SharesAsWeight,
    Validator,
    ids_of,
)
from system.errors import InvalidValue, NotSupported


class MergeKind(Enum):
    """What a levelled (parent-before-child) update may write in its first pass."""

    NONE = "none"
    UNION_CPUSET = "union_cpuset"  # the union of old and new ids
    MAX_VALUE = "max_value"  # the larger of old and new (-1 = unlimited is largest)


class SupportCheck(Enum):
    """How to decide that a declared resource exists on this host."""

    CONTROLLER = "controller"  # the controller is mounted / enabled: the file is standard
    FILE_EXISTS = "file_exists"  # optional kernel feature: the file must exist in the dir asked


@dataclass(frozen=True, slots=True)
class CgroupResource:
    name: str
    subsystem: str
    v1_file: str | None
    v2_file: str | None
    merge: MergeKind = MergeKind.NONE
    validator: Validator = IntRange(0)
    v1_codec: Codec = IntCodec()
    v2_codec: Codec = IntCodec("max")
    support: SupportCheck = SupportCheck.CONTROLLER
    writable: bool = True
    # a command, not a value (cgroup.kill): reading fails, and writing it again acts again,
    # so it never goes through write-if-different (resourceexecutor/commands.py writes it)
    write_only: bool = False
    # hybrid hosts: use the cgroup2 file under unified/ even though the controller is v1
    prefer_unified: bool = False
    # the v2 file holds several resources: writing one needs the file's current text
    v2_read_modify_write: bool = False
    # a byte limit the kernel keeps in pages (page_counter): a written value reads back
    # rounded down to the page size (1000000 -> 999424 with 4 KiB pages)
    page_rounded: bool = False
    # how cgroup v1 merges it when that differs from `merge` (None: same as `merge`)
    v1_merge: MergeKind | None = None
    doc: str = ""

    def file(self, version: int) -> str | None:
        return self.v1_file if version == 1 else self.v2_file

    def merge_for(self, version: int) -> MergeKind:
        """How a levelled update merges this resource on that cgroup version."""
        if version == 1 and self.v1_merge is not None:
            return self.v1_merge
        return self.merge

    def read_back(self, value: Any, page_size: int) -> Any:
        """What reading the file yields after writing canonical `value` (page rounding)."""
        if self.page_rounded and isinstance(value, int) and value > 0:
            return value - value % page_size
        return value

    def codec(self, version: int) -> Codec:
        if self.file(version) is None:
            raise NotSupported("%s has no cgroup v%d file" % (self.name, version))
        return self.v1_codec if version == 1 else self.v2_codec

    def validate(self, value: Any) -> None:
        """Check a canonical value; InvalidValue if refused (nothing is ever written)."""
        if not self.writable:
            raise InvalidValue("%s is read-only" % self.name)
        self.validator.validate(value)

    def format(self, value: Any, version: int, current: str | None = None) -> str:
        """Canonical value -> text for this version's file (``current``: the file's text,
        needed only when ``v2_read_modify_write``)."""
        return self.codec(version).format(value, current)

    def parse(self, text: str, version: int) -> Any:
        """Kernel text of this version's file -> canonical value."""
        return self.codec(version).parse(text)

    def matches(self, value: Any, text: str, version: int) -> bool:
        """Whether the file's current ``text`` already holds canonical ``value``.

        Compares after a trip through kernel text, so lossy conversions agree with
        themselves (shares 1024 -> weight 39 reads back as 999 shares), "max" equals -1,
        and cpu.max matches on its own field only. Unparsable text never matches.
        """
        try:
            wanted = self.parse(self.format(value, version, text), version)
            return bool(wanted == self.parse(text, version))
        except InvalidValue:
            return False

    def merged(self, old: Any, new: Any, version: int = 2) -> Any:
        """The value a levelled update writes in pass one (see MergeKind)."""
        merge = self.merge_for(version)
        if merge is MergeKind.UNION_CPUSET:
            return ids_of(old) | ids_of(new)
        if merge is MergeKind.MAX_VALUE:
            if old == UNLIMITED or new == UNLIMITED:
                return UNLIMITED
            return max(old, new)
        return new


def _int(lo: int, hi: int = MAX_INT64, unlimited: bool = False) -> IntRange:
    return IntRange(lo, hi, unlimited)


_V1_MEM = IntCodec("-1", V1_MEMORY_UNLIMITED_FLOOR)
_V2_MAX = IntCodec("max")
_READ_ONLY = ReadOnly()

_DECLARATIONS: tuple[CgroupResource, ...] = (
    # ---- cpu
    CgroupResource("cpu.shares", "cpu", "cpu.shares", "cpu.weight",
                   validator=_int(CPU_SHARES_MIN, CPU_SHARES_MAX), v2_codec=SharesAsWeight(),
                   doc="relative CPU weight; v2 weight = 1 + (shares-2)*9999/262142"),
    CgroupResource("cpu.cfs_quota_us", "cpu", "cpu.cfs_quota_us", "cpu.max",
                   validator=_int(1000, MAX_INT64, unlimited=True),
                   v1_codec=IntCodec("-1"), v2_codec=CpuMaxField(0),
                   # v1 refuses a child quota above its parent's (EINVAL): level it like a
                   # limit; v2 cpu.max only clips, any order works
                   v1_merge=MergeKind.MAX_VALUE,
                   doc="CFS quota per period in us, -1 unlimited; v2: cpu.max first field"),
    CgroupResource("cpu.cfs_period_us", "cpu", "cpu.cfs_period_us", "cpu.max",
                   validator=_int(1000, 1_000_000), v2_codec=CpuMaxField(1),
                   v2_read_modify_write=True,
                   doc="CFS period in us; v2: cpu.max second field"),
    CgroupResource("cpu.cfs_burst_us", "cpu", "cpu.cfs_burst_us", "cpu.max.burst",
                   validator=_int(0, 100 * 10 * 100000), v2_codec=IntCodec(),
                   support=SupportCheck.FILE_EXISTS, doc="CFS burst in us"),
    CgroupResource("cpu.idle", "cpu", "cpu.idle", "cpu.idle",
                   validator=_int(0, 1), v2_codec=IntCodec(), support=SupportCheck.FILE_EXISTS,
                   doc="SCHED_IDLE group (kernel >= 5.15)"),
    CgroupResource("cpu.bvt_warp_ns", "cpu", "cpu.bvt_warp_ns", "cpu.bvt_warp_ns",
                   validator=_int(-1, 2), v1_codec=IntCodec(), v2_codec=IntCodec(),
                   support=SupportCheck.FILE_EXISTS, doc="group identity (Anolis kernels)"),
    CgroupResource("cpu.stat", "cpu", "cpu.stat", "cpu.stat", validator=_READ_ONLY,
                   v1_codec=KeyValuesCodec(), v2_codec=KeyValuesCodec(), writable=False,
                   doc="throttling (v1 throttled_time ns; v2 throttled_usec) and v2 usage"),
    CgroupResource("cpuacct.usage", "cpuacct", "cpuacct.usage", "cpu.stat",
                   validator=_READ_ONLY, v2_codec=KeyFieldCodec("usage_usec", 1000),
                   writable=False, doc="CPU time in ns; v2: usage_usec*1000"),
    CgroupResource("cpuacct.stat", "cpuacct", "cpuacct.stat", None, validator=_READ_ONLY,
                   v1_codec=KeyValuesCodec(), writable=False,
                   doc="user/system in USER_HZ ticks (v2: see cpu.stat)"),
    # ---- pressure (core files in cgroup2; Anolis v1 puts them in cpuacct)
    *(
        CgroupResource(f"{kind}.pressure", "cpuacct", f"{kind}.pressure", f"{kind}.pressure",
                       validator=_READ_ONLY, v1_codec=PsiCodec(), v2_codec=PsiCodec(),
                       support=SupportCheck.FILE_EXISTS, writable=False, prefer_unified=True,
                       doc="PSI some/full avg10/60/300 and total us")
        for kind in ("cpu", "memory", "io")
    ),
    # ---- processes
    CgroupResource("cgroup.procs", "cpu", "cgroup.procs", "cgroup.procs",
                   validator=_int(1), v1_codec=PidListCodec(), v2_codec=PidListCodec(),
                   doc="member processes; write moves one pid"),
    CgroupResource("cgroup.kill", "cpu", None, "cgroup.kill", validator=_int(1, 1),
                   v2_codec=IntCodec(), support=SupportCheck.FILE_EXISTS, write_only=True,
                   doc="v2 (kernel >= 5.14): writing 1 kills every process below; write-only"),
    CgroupResource("tasks", "cpu", "tasks", "cgroup.threads",
                   validator=_int(1), v1_codec=PidListCodec(), v2_codec=PidListCodec(),
                   doc="member threads; write moves one tid"),
    # ---- cpuset
    *(
        CgroupResource(name, "cpuset", name, name, merge=MergeKind.UNION_CPUSET,
                       validator=CpusetValue(), v1_codec=CpusetCodec(), v2_codec=CpusetCodec(),
                       doc="cpu/node list; a child must stay within its parent")
        for name in ("cpuset.cpus", "cpuset.mems")
    ),
    CgroupResource("cpuset.cpus.effective", "cpuset", "cpuset.effective_cpus",
                   "cpuset.cpus.effective", validator=_READ_ONLY, v1_codec=CpusetCodec(),
                   v2_codec=CpusetCodec(), writable=False, doc="cpus the cgroup really gets"),
    CgroupResource("cpuset.mems.effective", "cpuset", "cpuset.effective_mems",
                   "cpuset.mems.effective", validator=_READ_ONLY, v1_codec=CpusetCodec(),
                   v2_codec=CpusetCodec(), writable=False, doc="nodes the cgroup really gets"),
    # ---- memory
    CgroupResource("memory.limit_in_bytes", "memory", "memory.limit_in_bytes", "memory.max",
                   validator=_int(0, MAX_INT64, unlimited=True), v1_codec=_V1_MEM,
                   v2_codec=_V2_MAX, page_rounded=True, doc="hard limit in bytes, -1 unlimited"),
    CgroupResource("memory.soft_limit_in_bytes", "memory", "memory.soft_limit_in_bytes", None,
                   validator=_int(0, MAX_INT64, unlimited=True), v1_codec=_V1_MEM,
                   page_rounded=True,
                   doc="v1 soft limit; no v2 twin here (runc maps it to memory.low, which "
                       "has its own entry)"),
    *(
        CgroupResource(name, "memory", name, name, merge=MergeKind.MAX_VALUE,
                       validator=_int(0, MAX_INT64, unlimited=True), v1_codec=_V1_MEM,
                       v2_codec=_V2_MAX, support=SupportCheck.FILE_EXISTS, page_rounded=True,
                       doc="memory protection/throttle in bytes; v1 needs Anolis")
        for name in ("memory.min", "memory.low", "memory.high")
    ),
    CgroupResource("memory.usage_in_bytes", "memory", "memory.usage_in_bytes", "memory.current",
                   validator=_READ_ONLY, writable=False, doc="charged bytes"),
    CgroupResource("memory.stat", "memory", "memory.stat", "memory.stat", validator=_READ_ONLY,
                   v1_codec=KeyValuesCodec(), v2_codec=KeyValuesCodec(), writable=False,
                   doc="v1 total_* keys are hierarchical; v2 keys are"),
    CgroupResource("memory.numa_stat", "memory", "memory.numa_stat", "memory.numa_stat",
                   validator=_READ_ONLY, v1_codec=RawCodec(), v2_codec=RawCodec(),
                   writable=False, support=SupportCheck.FILE_EXISTS, doc="per-node pages (raw)"),
    CgroupResource("memory.oom.group", "memory", "memory.oom.group", "memory.oom.group",
                   validator=_int(0, 1), v2_codec=IntCodec(), support=SupportCheck.FILE_EXISTS,
                   doc="kill the whole cgroup on OOM"),
    CgroupResource("memory.wmark_ratio", "memory", "memory.wmark_ratio", "memory.wmark_ratio",
                   validator=_int(0, 100), v2_codec=IntCodec(),
                   support=SupportCheck.FILE_EXISTS, doc="Anolis async reclaim watermark"),
    CgroupResource("memory.wmark_scale_factor", "memory", "memory.wmark_scale_factor",
                   "memory.wmark_scale_factor", validator=_int(1, 1000), v2_codec=IntCodec(),
                   support=SupportCheck.FILE_EXISTS, doc="Anolis"),
    CgroupResource("memory.wmark_min_adj", "memory", "memory.wmark_min_adj",
                   "memory.wmark_min_adj", validator=_int(-25, 50), v1_codec=IntCodec(),
                   v2_codec=IntCodec(), support=SupportCheck.FILE_EXISTS, doc="Anolis"),
    CgroupResource("memory.priority", "memory", "memory.priority", "memory.priority",
                   validator=_int(0, 12), v2_codec=IntCodec(), support=SupportCheck.FILE_EXISTS,
                   doc="Anolis OOM priority"),
    CgroupResource("memory.use_priority_oom", "memory", "memory.use_priority_oom",
                   "memory.use_priority_oom", validator=_int(0, 1), v2_codec=IntCodec(),
                   support=SupportCheck.FILE_EXISTS, doc="Anolis"),
    # ---- block io
    CgroupResource("blkio.weight", "blkio", "blkio.weight", "io.weight",
                   validator=_int(BLKIO_WEIGHT_MIN, BLKIO_WEIGHT_MAX),
                   v2_codec=BlkioAsIoWeight(), support=SupportCheck.FILE_EXISTS,
                   doc="proportional io weight; v2 io.weight = 1 + (w-10)*9999/990"),
    *(
        CgroupResource(f"blkio.throttle.{name}_device", "blkio", f"blkio.throttle.{name}_device",
                       None, validator=DeviceValue(), v1_codec=DeviceLimitCodec(),
                       doc="per-device throttle 'MAJ:MIN VALUE'")
        for name in ("read_bps", "write_bps", "read_iops", "write_iops")
    ),
    # ---- pids, net
    CgroupResource("pids.max", "pids", "pids.max", "pids.max",
                   validator=_int(0, MAX_INT64, unlimited=True), v1_codec=IntCodec("max"),
                   doc="task limit, -1 = max"),
    CgroupResource("net_cls.classid", "net_cls", "net_cls.classid", None,
                   validator=_int(0, (1 << 32) - 1), doc="tc class id (v1 only)"),
)


def _build(declarations: tuple[CgroupResource, ...]) -> Mapping[str, CgroupResource]:
    table: dict[str, CgroupResource] = {}
    for resource in declarations:
        if resource.name in table:
            raise ValueError("duplicate cgroup resource %r" % resource.name)
        table[resource.name] = resource
    return MappingProxyType(table)


REGISTRY: Mapping[str, CgroupResource] = _build(_DECLARATIONS)


def get_resource(name: str | CgroupResource) -> CgroupResource:
    """The resource declared under ``name``; NotSupported for an unknown name."""
    if isinstance(name, CgroupResource):
        return name
    try:
        return REGISTRY[name]
    except KeyError:
        raise NotSupported("unknown cgroup resource %r" % name) from None
