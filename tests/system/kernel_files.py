"""The cgroup interface file names the kernel documents: the authority the registry and the
fake trees are checked against.

Written from Documentation/admin-guide/cgroup-v2.rst ("Core Interface Files" and each
controller's "Interface Files" section, Linux 6.x) and Documentation/admin-guide/
cgroup-v1/*.rst (cgroups.rst, cpuacct.rst, cpusets.rst, memory.rst, blkio-controller.rst,
pids.rst, net_cls.rst) plus scheduler/sched-bwc.rst for the v1 CFS files. Names only;
nothing here is derived from the code under test.

Alibaba Cloud Linux / Anolis kernels add files koordinator uses; they are listed apart
(VENDOR_*) so an upstream name can never be mistaken for a vendor one or the reverse.
"""

from __future__ import annotations

from collections.abc import Mapping

# ---- cgroup v2 --------------------------------------------------------------------------

V2_CORE: frozenset[str] = frozenset({
    "cgroup.type", "cgroup.procs", "cgroup.threads", "cgroup.controllers",
    "cgroup.subtree_control", "cgroup.events", "cgroup.max.descendants", "cgroup.max.depth",
    "cgroup.stat", "cgroup.freeze", "cgroup.kill", "cgroup.pressure", "irq.pressure",
    # present whether or not their controller is enabled (cpu.stat: usage fields only)
    "cpu.stat", "cpu.pressure", "memory.pressure", "io.pressure",
})

V2_CONTROLLER_FILES: Mapping[str, frozenset[str]] = {
    "cpu": frozenset({
        "cpu.stat", "cpu.stat.local", "cpu.weight", "cpu.weight.nice", "cpu.max",
        "cpu.max.burst", "cpu.pressure", "cpu.uclamp.min", "cpu.uclamp.max", "cpu.idle",
    }),
    "memory": frozenset({
        "memory.current", "memory.min", "memory.low", "memory.high", "memory.max",
        "memory.reclaim", "memory.peak", "memory.oom.group", "memory.events",
        "memory.events.local", "memory.stat", "memory.numa_stat", "memory.swap.current",
        "memory.swap.high", "memory.swap.peak", "memory.swap.max", "memory.swap.events",
        "memory.zswap.current", "memory.zswap.max", "memory.zswap.writeback",
        "memory.pressure",
    }),
    "io": frozenset({
        "io.stat", "io.cost.qos", "io.cost.model", "io.weight", "io.max", "io.pressure",
        "io.latency", "io.prio.class",
    }),
    "pids": frozenset({"pids.max", "pids.current", "pids.peak", "pids.events",
                       "pids.events.local"}),
    "cpuset": frozenset({
        "cpuset.cpus", "cpuset.cpus.effective", "cpuset.mems", "cpuset.mems.effective",
        "cpuset.cpus.exclusive", "cpuset.cpus.exclusive.effective", "cpuset.cpus.isolated",
        "cpuset.cpus.partition",
    }),
    "rdma": frozenset({"rdma.max", "rdma.current"}),
    "misc": frozenset({"misc.capacity", "misc.current", "misc.peak", "misc.max",
                       "misc.events", "misc.events.local"}),
}

# ---- cgroup v1 --------------------------------------------------------------------------

V1_CORE: frozenset[str] = frozenset({
    "tasks", "cgroup.procs", "cgroup.event_control", "notify_on_release", "release_agent",
    "cgroup.clone_children", "cgroup.sane_behavior",
})

V1_CONTROLLER_FILES: Mapping[str, frozenset[str]] = {
    "cpu": frozenset({
        "cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.cfs_burst_us", "cpu.stat",
        "cpu.rt_runtime_us", "cpu.rt_period_us", "cpu.idle",
    }),
    "cpuacct": frozenset({
        "cpuacct.usage", "cpuacct.stat", "cpuacct.usage_percpu", "cpuacct.usage_all",
        "cpuacct.usage_user", "cpuacct.usage_sys", "cpuacct.usage_percpu_user",
        "cpuacct.usage_percpu_sys",
    }),
    "cpuset": frozenset({
        "cpuset.cpus", "cpuset.mems", "cpuset.effective_cpus", "cpuset.effective_mems",
        "cpuset.cpu_exclusive", "cpuset.mem_exclusive", "cpuset.mem_hardwall",
        "cpuset.memory_migrate", "cpuset.memory_pressure", "cpuset.memory_pressure_enabled",
        "cpuset.memory_spread_page", "cpuset.memory_spread_slab", "cpuset.sched_load_balance",
        "cpuset.sched_relax_domain_level",
    }),
    "memory": frozenset({
        "memory.usage_in_bytes", "memory.memsw.usage_in_bytes", "memory.limit_in_bytes",
        "memory.memsw.limit_in_bytes", "memory.failcnt", "memory.memsw.failcnt",
        "memory.max_usage_in_bytes", "memory.memsw.max_usage_in_bytes",
        "memory.soft_limit_in_bytes", "memory.stat", "memory.use_hierarchy",
        "memory.force_empty", "memory.pressure_level", "memory.swappiness",
        "memory.move_charge_at_immigrate", "memory.oom_control", "memory.numa_stat",
        "memory.kmem.limit_in_bytes", "memory.kmem.usage_in_bytes", "memory.kmem.failcnt",
        "memory.kmem.max_usage_in_bytes", "memory.kmem.tcp.limit_in_bytes",
        "memory.kmem.tcp.usage_in_bytes", "memory.kmem.tcp.failcnt",
        "memory.kmem.tcp.max_usage_in_bytes",
    }),
    "blkio": frozenset({
        "blkio.weight", "blkio.weight_device", "blkio.leaf_weight", "blkio.leaf_weight_device",
        "blkio.time", "blkio.sectors", "blkio.io_service_bytes", "blkio.io_serviced",
        "blkio.io_service_time", "blkio.io_wait_time", "blkio.io_merged", "blkio.io_queued",
        "blkio.reset_stats", "blkio.throttle.read_bps_device",
        "blkio.throttle.write_bps_device", "blkio.throttle.read_iops_device",
        "blkio.throttle.write_iops_device", "blkio.throttle.io_serviced",
        "blkio.throttle.io_service_bytes",
    }),
    "pids": frozenset({"pids.max", "pids.current", "pids.events"}),
    "net_cls": frozenset({"net_cls.classid"}),
}

# ---- vendor kernels (Alibaba Cloud Linux / Anolis), as koordinator uses them ----------

VENDOR_V1_FILES: Mapping[str, frozenset[str]] = {
    "cpu": frozenset({"cpu.bvt_warp_ns"}),
    # PSI per cgroup on v1 (psi=1 with the cgroup v1 PSI interface)
    "cpuacct": frozenset({"cpu.pressure", "memory.pressure", "io.pressure"}),
    "memory": frozenset({
        "memory.min", "memory.low", "memory.high", "memory.wmark_ratio",
        "memory.wmark_scale_factor", "memory.wmark_min_adj", "memory.priority",
        "memory.use_priority_oom", "memory.oom.group",
    }),
}
VENDOR_V2_FILES: Mapping[str, frozenset[str]] = {
    "cpu": frozenset({"cpu.bvt_warp_ns"}),
    "memory": frozenset({
        "memory.wmark_ratio", "memory.wmark_scale_factor", "memory.wmark_min_adj",
        "memory.priority", "memory.use_priority_oom",
    }),
}


def v1_documented(controller: str) -> frozenset[str]:
    """Upstream names a v1 cgroup of this controller can hold."""
    return V1_CORE | V1_CONTROLLER_FILES.get(controller, frozenset())


def v2_documented(controller: str) -> frozenset[str]:
    """Upstream names a v2 cgroup with this controller enabled can hold."""
    return V2_CORE | V2_CONTROLLER_FILES.get(controller, frozenset())
