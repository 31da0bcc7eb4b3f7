"""What the daemon learns about its host at start: cgroup mode and where each
controller lives, the kubelet cgroup driver, CPUs and NUMA nodes.

Logged once so that a first run on a new machine shows what the agent sees. A
host without cgroups is reported, not fatal: the HTTP endpoint still serves.
"""

from __future__ import annotations

from typing import Any

import structlog

from system.cgroup_driver import detect_host_driver
from system.cgroup_files import CgroupFiles
from system.cgroup_version import detect_hierarchy
from system.errors import SystemFileError
from system.host import Host
from system.topology import read_cpu_topology

log = structlog.get_logger(__name__)


def host_facts(host: Host) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    try:
        hierarchy = detect_hierarchy(host)
    except SystemFileError as exc:
        facts["cgroup_error"] = str(exc)
    else:
        facts["cgroup_mode"] = hierarchy.mode.value
        facts["controllers"] = dict(hierarchy.describe())
        driver = detect_host_driver(CgroupFiles(host, hierarchy))
        facts["cgroup_driver"] = driver.value if driver else "none (no kubepods cgroup yet)"
    try:
        topology = read_cpu_topology(host)
    except (OSError, ValueError, SystemFileError) as exc:
        facts["topology_error"] = str(exc)
    else:
        facts["cpus"] = len(topology.cpus)
        facts["sockets"] = len(topology.sockets)
        facts["numa_nodes"] = len(topology.numa_nodes)
        facts["threads_per_core"] = topology.threads_per_core
    return facts


def log_host_facts(host: Host) -> dict[str, Any]:
    facts = host_facts(host)
    if "cgroup_error" in facts or "topology_error" in facts:
        log.warning("host_detected", **facts)
    else:
        log.info("host_detected", **facts)
    return facts
