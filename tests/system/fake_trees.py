"""Fake kernel trees (cgroupfs v1 / v2 / hybrid, procfs, sysfs) in a tmp dir, for tests.

Contents follow the kernel's documented formats (Documentation/admin-guide/cgroup-v1/*.rst,
cgroup-v2.rst, accounting/psi.rst, filesystems/proc.rst, ABI/stable/sysfs-devices-system-cpu).
Other packages' tests import these builders: ``from tests.system.fake_trees import ...``.

Regular files do not behave like kernel files (no validation, no ENODEV on removal), so
tests that need the kernel's answer belong with the real-kernel sandbox instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from system.cgroup_version import CgroupMode, detect_hierarchy
from system.host import Host

V1_UNLIMITED_MEMORY = "9223372036854771712"
PSI_ZERO = (
    "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
)

V1_MEMORY_STAT = (
    "cache 4096\nrss 8192\nrss_huge 0\nshmem 0\nmapped_file 0\ndirty 0\nwriteback 0\n"
    "pgpgin 10\npgpgout 5\npgfault 20\npgmajfault 0\ninactive_anon 0\nactive_anon 8192\n"
    "inactive_file 4096\nactive_file 0\nunevictable 0\n"
    "hierarchical_memory_limit 9223372036854771712\n"
    "total_cache 4096\ntotal_rss 8192\ntotal_rss_huge 0\ntotal_shmem 0\ntotal_mapped_file 0\n"
    "total_dirty 0\ntotal_writeback 0\ntotal_pgpgin 10\ntotal_pgpgout 5\ntotal_pgfault 20\n"
    "total_pgmajfault 0\ntotal_inactive_anon 0\ntotal_active_anon 8192\n"
    "total_inactive_file 4096\ntotal_active_file 0\ntotal_unevictable 0\n"
)

V2_MEMORY_STAT = (
    "anon 8192\nfile 4096\nkernel 0\nkernel_stack 0\npagetables 0\nsock 0\nshmem 0\n"
    "file_mapped 0\nfile_dirty 0\nfile_writeback 0\nanon_thp 0\ninactive_anon 0\n"
    "active_anon 8192\ninactive_file 4096\nactive_file 0\nunevictable 0\n"
    "slab_reclaimable 0\nslab_unreclaimable 0\npgfault 20\npgmajfault 0\n"
)

# default files of a freshly made v1 cgroup, per controller
V1_FILES: Mapping[str, Mapping[str, str]] = {
    "cpu": {
        "cpu.shares": "1024", "cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000",
        "cpu.cfs_burst_us": "0", "cpu.idle": "0",
        "cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
        "cgroup.procs": "", "tasks": "",
    },
    "cpuacct": {
        "cpuacct.usage": "0", "cpuacct.stat": "user 0\nsystem 0\n",
        "cgroup.procs": "", "tasks": "",
    },
    "cpuset": {
        "cpuset.cpus": "", "cpuset.mems": "", "cpuset.effective_cpus": "",
        "cpuset.effective_mems": "", "cgroup.procs": "", "tasks": "",
    },
    "memory": {
        "memory.limit_in_bytes": V1_UNLIMITED_MEMORY,
        "memory.soft_limit_in_bytes": V1_UNLIMITED_MEMORY,
        "memory.usage_in_bytes": "12288", "memory.stat": V1_MEMORY_STAT,
        "cgroup.procs": "", "tasks": "",
    },
    "blkio": {
        "blkio.weight": "500",
        "blkio.throttle.read_bps_device": "", "blkio.throttle.write_bps_device": "",
        "blkio.throttle.read_iops_device": "", "blkio.throttle.write_iops_device": "",
        "cgroup.procs": "", "tasks": "",
    },
    "pids": {"pids.max": "max", "pids.current": "0", "cgroup.procs": "", "tasks": ""},
}

# Anolis-only v1 files (added with anolis=True)
V1_ANOLIS_FILES: Mapping[str, Mapping[str, str]] = {
    "cpu": {"cpu.bvt_warp_ns": "0"},
    "cpuacct": {"cpu.pressure": PSI_ZERO, "memory.pressure": PSI_ZERO, "io.pressure": PSI_ZERO},
    "memory": {
        "memory.min": "0", "memory.low": "0", "memory.high": V1_UNLIMITED_MEMORY,
        "memory.wmark_ratio": "0", "memory.wmark_scale_factor": "50",
        "memory.wmark_min_adj": "0", "memory.priority": "0", "memory.use_priority_oom": "0",
        "memory.oom.group": "0",
    },
}

V2_CORE = {
    "cgroup.procs": "", "cgroup.threads": "", "cgroup.controllers": "",
    "cgroup.subtree_control": "", "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
    "cpu.pressure": PSI_ZERO, "memory.pressure": PSI_ZERO, "io.pressure": PSI_ZERO,
    "cgroup.kill": "",  # write-only in the kernel (5.14+); a plain file here
}

# non-root files per v2 controller
V2_FILES: Mapping[str, Mapping[str, str]] = {
    "cpu": {"cpu.weight": "100", "cpu.max": "max 100000", "cpu.max.burst": "0", "cpu.idle": "0"},
    "cpuset": {
        "cpuset.cpus": "", "cpuset.mems": "", "cpuset.cpus.effective": "",
        "cpuset.mems.effective": "",
    },
    "memory": {
        "memory.max": "max", "memory.min": "0", "memory.low": "0", "memory.high": "max",
        "memory.current": "12288", "memory.stat": V2_MEMORY_STAT, "memory.oom.group": "0",
    },
    "io": {"io.weight": "default 100\n", "io.max": ""},
    "pids": {"pids.max": "max", "pids.current": "0"},
}
V2_CPU_STAT_WITH_CPU = (
    "usage_usec 0\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\n"
    "throttled_usec 0\nnr_bursts 0\nburst_usec 0\n"
)


def write_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _fill(directory: Path, files: Mapping[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        write_file(directory / name, text)


def build_v1_tree(
    root: Path,
    *,
    cpus: str = "0-3",
    mems: str = "0",
    anolis: bool = False,
    controllers: Iterable[str] = ("cpu", "cpuacct", "cpuset", "memory", "blkio", "pids"),
) -> Host:
    """A pure cgroup v1 host: one directory per controller under <root>/sys/fs/cgroup."""
    host = Host.under(root)
    for name in controllers:
        files = dict(V1_FILES[name])
        if anolis:
            files.update(V1_ANOLIS_FILES.get(name, {}))
        if name == "cpuset":
            files.update({"cpuset.cpus": cpus, "cpuset.mems": mems,
                          "cpuset.effective_cpus": cpus, "cpuset.effective_mems": mems})
        _fill(host.cgroup(name), files)
    return host


def build_v2_tree(
    root: Path,
    *,
    cpus: str = "0-3",
    mems: str = "0",
    controllers: Iterable[str] = ("cpuset", "cpu", "io", "memory", "pids"),
) -> Host:
    """A pure cgroup v2 host: cgroup2 mounted at <root>/sys/fs/cgroup."""
    host = Host.under(root)
    enabled = list(controllers)
    files = dict(V2_CORE)
    files["cgroup.controllers"] = " ".join(enabled)
    files["cgroup.subtree_control"] = " ".join(enabled)
    if "cpuset" in enabled:
        files.update({"cpuset.cpus.effective": cpus, "cpuset.mems.effective": mems})
    if "memory" in enabled:
        files.update({"memory.stat": V2_MEMORY_STAT, "memory.current": "12288"})
    _fill(host.cgroup_root, files)
    return host


def build_hybrid_tree(
    root: Path, *, cpus: str = "0-1", mems: str = "0", anolis: bool = False
) -> Host:
    """Like this machine: v1 controllers plus a controller-less cgroup2 at unified/."""
    host = build_v1_tree(root, cpus=cpus, mems=mems, anolis=anolis)
    files = dict(V2_CORE)
    _fill(host.cgroup("unified"), files)
    return host


def add_cgroup(host: Host, cgroup_dir: str, overrides: Mapping[str, str] | None = None) -> None:
    """Create a cgroup in every hierarchy of ``host`` with default files.

    ``overrides`` (file name -> text) replace defaults wherever that file name exists.
    v2 cgroups get the files of the controllers their parent delegates. v1 cpuset children
    copy the parent's cpus/mems (as a test would have to on the real kernel).
    """
    rel = cgroup_dir.strip("/")
    hierarchy = detect_hierarchy(host)
    extra = dict(overrides or {})
    for name, root in hierarchy.v1_roots:
        files = dict(V1_FILES.get(name, {"cgroup.procs": "", "tasks": ""}))
        for anolis_name in V1_ANOLIS_FILES.get(name, {}):
            if (root / anolis_name).exists():
                files[anolis_name] = V1_ANOLIS_FILES[name][anolis_name]
        if name == "cpuset":
            parent = (root / rel).parent
            for key in ("cpuset.cpus", "cpuset.mems"):
                files[key] = (parent / key).read_text() if (parent / key).exists() else ""
            files["cpuset.effective_cpus"] = files["cpuset.cpus"]
            files["cpuset.effective_mems"] = files["cpuset.mems"]
        for key, text in extra.items():
            if key in files:
                files[key] = text
        _fill(root / rel, files)
    if hierarchy.unified_root is not None:
        files = dict(V2_CORE)
        files["cgroup.controllers"] = " ".join(sorted(hierarchy.v2_controllers))
        files["cgroup.subtree_control"] = ""
        for controller in hierarchy.v2_controllers:
            files.update(V2_FILES.get(controller, {}))
        if "cpu" in hierarchy.v2_controllers:
            files["cpu.stat"] = V2_CPU_STAT_WITH_CPU
        if hierarchy.mode is CgroupMode.V2 and "cpuset" in hierarchy.v2_controllers:
            parent = (hierarchy.unified_root / rel).parent
            eff = parent / "cpuset.cpus.effective"
            files["cpuset.cpus.effective"] = eff.read_text() if eff.exists() else ""
            effm = parent / "cpuset.mems.effective"
            files["cpuset.mems.effective"] = effm.read_text() if effm.exists() else ""
        for key, text in extra.items():
            if key in files:
                files[key] = text
        _fill(hierarchy.unified_root / rel, files)


# ---------------------------------------------------------------------------- procfs

DEFAULT_PROC_STAT = (
    "cpu  1000 0 500 8000 10 0 5 0 0 0\n"
    "cpu0 500 0 250 4000 5 0 3 0 0 0\ncpu1 500 0 250 4000 5 0 2 0 0 0\n"
    "intr 0\nctxt 0\nbtime 1700000000\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n"
)
DEFAULT_MEMINFO = (
    "MemTotal:       24683568 kB\nMemFree:        20000000 kB\n"
    "MemAvailable:   22000000 kB\nBuffers:           19888 kB\nCached:           387876 kB\n"
)


def build_proc_tree(
    root: Path,
    *,
    stat: str = DEFAULT_PROC_STAT,
    meminfo: str = DEFAULT_MEMINFO,
    loadavg: str = "0.46 0.21 0.07 1/89 7111\n",
    psi: bool = True,
    pids: Mapping[int, str] | None = None,
) -> Host:
    """A fake /proc under <root>/proc: stat, meminfo, loadavg, pressure/*, <pid>/cgroup."""
    host = Host.under(root)
    write_file(host.proc("stat"), stat)
    write_file(host.proc("meminfo"), meminfo)
    write_file(host.proc("loadavg"), loadavg)
    if psi:
        for kind in ("cpu", "memory", "io"):
            write_file(host.proc("pressure", kind), PSI_ZERO)
    for pid, text in (pids or {}).items():
        write_file(host.proc(str(pid), "cgroup"), text)
    return host


# ---------------------------------------------------------------------------- sysfs topology

def _list(ids: Iterable[int]) -> str:
    from system.cpuset import format_cpuset

    return format_cpuset(ids) + "\n"


def build_topology_tree(
    root: Path,
    *,
    sockets: int = 2,
    nodes_per_socket: int = 2,
    cores_per_node: int = 2,
    threads_per_core: int = 2,
    node_memory_kb: int = 8 * 1024 * 1024,
    l3_per_node: bool = False,
    offline: Iterable[int] = (),
    with_cache_id: bool = True,
) -> Host:
    """A fake /sys/devices/system/{cpu,node} for a multi-socket SMT NUMA machine.

    Numbering follows Intel's usual order: all first threads, then all second threads
    (cpu = thread * physical_cores + core index). core_id restarts in every socket.
    L3 is shared per socket (or per NUMA node with ``l3_per_node``, like SNC).
    """
    host = Host.under(root)
    cpu_root = host.sys("devices", "system", "cpu")
    node_root = host.sys("devices", "system", "node")
    physical = sockets * nodes_per_socket * cores_per_node
    total = physical * threads_per_core
    offline_set = set(offline)
    layout: dict[int, tuple[int, int, int]] = {}  # cpu -> (socket, node, core_id)
    for thread in range(threads_per_core):
        for index in range(physical):
            socket, within = divmod(index, nodes_per_socket * cores_per_node)
            node = socket * nodes_per_socket + within // cores_per_node
            layout[thread * physical + index] = (socket, node, within)
    for cpu, (socket, node, core) in layout.items():
        cpu_dir = cpu_root / ("cpu%d" % cpu)
        siblings = [c for c, v in layout.items() if v[0] == socket and v[2] == core]
        write_file(cpu_dir / "topology" / "core_id", "%d\n" % core)
        write_file(cpu_dir / "topology" / "physical_package_id", "%d\n" % socket)
        write_file(cpu_dir / "topology" / "thread_siblings_list", _list(siblings))
        l3_key = node if l3_per_node else socket
        sharing = [c for c, v in layout.items() if (v[1] if l3_per_node else v[0]) == l3_key]
        caches = [(0, 1, "Data", core), (1, 1, "Instruction", core), (2, 2, "Unified", core),
                  (3, 3, "Unified", l3_key)]
        for index, level, kind, cache_id in caches:
            cache = cpu_dir / "cache" / ("index%d" % index)
            write_file(cache / "level", "%d\n" % level)
            write_file(cache / "type", kind + "\n")
            if with_cache_id:
                write_file(cache / "id", "%d\n" % cache_id)
            shared = sharing if level == 3 else siblings
            write_file(cache / "shared_cpu_list", _list(shared))
    online = [c for c in range(total) if c not in offline_set]
    write_file(cpu_root / "online", _list(online))
    write_file(cpu_root / "possible", _list(range(total)))
    write_file(cpu_root / "present", _list(range(total)))
    node_count = sockets * nodes_per_socket
    write_file(node_root / "online", _list(range(node_count)))
    write_file(node_root / "possible", _list(range(node_count)))
    for node in range(node_count):
        cpus = [c for c, v in layout.items() if v[1] == node]
        write_file(node_root / ("node%d" % node) / "cpulist", _list(cpus))
        write_file(
            node_root / ("node%d" % node) / "meminfo",
            "Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\n"
            "Node %d MemUsed:        %d kB\n"
            % (node, node_memory_kb, node, node_memory_kb // 2, node, node_memory_kb // 2),
        )
        # Linux's defaults: 10 local, 21 remote; 11 within a socket (SNC-like)
        distances = [10 if other == node else 11 if other // nodes_per_socket == node // nodes_per_socket else 21
                     for other in range(node_count)]
        write_file(node_root / ("node%d" % node) / "distance", " ".join(map(str, distances)) + "\n")
    return host


def build_resctrl_tree(
    root: Path, *, cbm_mask: str = "7ff", closids: int = 16, mba: bool = True
) -> Host:
    """A mounted fake /sys/fs/resctrl with L3 CAT (and MBA) info, plus /proc hints."""
    host = Host.under(root)
    base = host.sys("fs", "resctrl")
    write_file(base / "schemata", "L3:0=%s;1=%s\n" % (cbm_mask, cbm_mask)
               + ("MB:0=100;1=100\n" if mba else ""))
    write_file(base / "tasks", "")
    write_file(base / "info" / "L3" / "cbm_mask", cbm_mask + "\n")
    write_file(base / "info" / "L3" / "min_cbm_bits", "1\n")
    write_file(base / "info" / "L3" / "num_closids", "%d\n" % closids)
    write_file(base / "info" / "L3" / "shareable_bits", "0\n")
    if mba:
        write_file(base / "info" / "MB" / "min_bandwidth", "10\n")
        write_file(base / "info" / "MB" / "bandwidth_gran", "10\n")
        write_file(base / "info" / "MB" / "num_closids", "8\n")
        write_file(base / "info" / "MB" / "delay_linear", "1\n")
    write_file(host.proc("filesystems"), "nodev\tsysfs\nnodev\tcgroup2\nnodev\tresctrl\n")
    write_file(host.proc("cpuinfo"),
               "processor\t: 0\nflags\t\t: fpu sse2 rdt_a cat_l3 mba cqm_llc\n")
    return host


# ---------------------------------------------------------------------------- changing a tree

def _cgroup_dirs(host: Host, cgroup_dir: str) -> list[Path]:
    hierarchy = detect_hierarchy(host)
    rel = cgroup_dir.strip("/")
    roots = [root for _, root in hierarchy.v1_roots]
    if hierarchy.unified_root is not None:
        roots.append(hierarchy.unified_root)
    return [root / rel if rel else root for root in roots]


def set_cgroup_file(host: Host, cgroup_dir: str, file_name: str, text: str) -> int:
    """Write ``text`` to ``file_name`` of a fake cgroup in every hierarchy that has that
    file (e.g. a new cpuacct.usage, PSI or memory.stat sample). Returns how many were set."""
    count = 0
    for directory in _cgroup_dirs(host, cgroup_dir):
        if (directory / file_name).is_file():
            (directory / file_name).write_text(text)
            count += 1
    return count


def remove_cgroup(host: Host, cgroup_dir: str) -> None:
    """Delete a fake cgroup (and its children) from every hierarchy: the pod is gone."""
    import shutil

    for directory in _cgroup_dirs(host, cgroup_dir):
        if directory.is_dir():
            shutil.rmtree(directory)
