"""What the daemon knows about its host, probed in one place.

The cgroup hierarchy, the CPU topology (with its NUMA nodes) and the memory total are
read once at start: agents read them here and never probe sysfs or the cgroup root
themselves. The kubelet cgroup driver (hence the kube QoS dirs) is different: a node
agent often starts before kubelet has made `kubepods`, so while the driver is unknown
every ask re-probes (at most once per `reprobe_interval`), and agents that need the dirs
ask on every round instead of keeping a first answer.

A host without cgroups is reported, not fatal: `hierarchy` is then the empty one (every
resource NotSupported) and `cgroup_error` says why.
"""

from __future__ import annotations

import math
import time
from types import MappingProxyType
from typing import Any, Callable, Mapping

import structlog

from koordlet.config import defaults
from system.cgroup_driver import detect_host_driver
from system.cgroup_files import CgroupFiles
from system.cgroup_layout import CgroupDriver, QoSTier, qos_dir
from system.cgroup_version import CgroupHierarchy, detect_hierarchy, no_hierarchy
from system.errors import SystemFileError
from system.host import Host
from system.procfs import read_meminfo
from system.topology import CpuTopology, read_cpu_topology

log = structlog.get_logger(__name__)

# What a failed read of a host fact raises: a missing or unreadable file, a value the
# parser refuses, or system/'s typed errors.
_READ_ERRORS = (OSError, ValueError, SystemFileError)

_NO_DIRS: Mapping[QoSTier, str] = MappingProxyType({})


class HostFacts:
    def __init__(self, host: Host, *, clock: Callable[[], float] = time.monotonic,
                 reprobe_interval: float = defaults.HOST_DRIVER_REPROBE_SECONDS) -> None:
        self.host = host
        self._clock = clock
        self._reprobe_interval = reprobe_interval
        self.cgroup_error: str | None = None
        try:
            hierarchy = detect_hierarchy(host)
        except SystemFileError as exc:
            self.cgroup_error = str(exc)
            hierarchy = no_hierarchy(host.cgroup_root)
        self.hierarchy: CgroupHierarchy = hierarchy
        self.files = CgroupFiles(host, hierarchy)
        self.topology_error: str | None = None
        self.topology: CpuTopology | None = None
        try:
            self.topology = read_cpu_topology(host)
        except _READ_ERRORS as exc:
            self.topology_error = str(exc)
        self.memory_error: str | None = None
        self.memory_bytes: int | None = None
        try:
            self.memory_bytes = read_meminfo(host).total_bytes
        except _READ_ERRORS as exc:
            self.memory_error = str(exc)
        self._driver: CgroupDriver | None = None
        self._driver_probed_at = -math.inf
        self._qos_dirs = _NO_DIRS

    @property
    def has_cgroups(self) -> bool:
        return self.cgroup_error is None

    @property
    def online_cpus(self) -> frozenset[int]:
        """The online CPUs; empty when the topology could not be read."""
        return self.topology.online_cpus if self.topology is not None else frozenset()

    def driver(self) -> CgroupDriver | None:
        """kubelet's cgroup driver, from where `kubepods` lives; None while there is none."""
        if self._driver is None and self.has_cgroups:
            now = self._clock()
            if now - self._driver_probed_at >= self._reprobe_interval:
                self._driver_probed_at = now
                self._driver = detect_host_driver(self.files)
                if self._driver is not None:
                    self._qos_dirs = MappingProxyType({tier: qos_dir(self._driver, tier) for tier in QoSTier})
                    log.info("cgroup_driver_detected", driver=self._driver.value)
        return self._driver

    def qos_dirs(self) -> Mapping[QoSTier, str]:
        """The kube QoS tier dirs (relative cgroup dirs); empty while the driver is unknown."""
        self.driver()
        return self._qos_dirs

    def describe(self) -> dict[str, Any]:
        """The facts for the start-up log line."""
        facts: dict[str, Any] = {}
        if self.cgroup_error is not None:
            facts["cgroup_error"] = self.cgroup_error
        else:
            facts["cgroup_mode"] = self.hierarchy.mode.value
            facts["controllers"] = dict(self.hierarchy.describe())
            driver = self.driver()
            facts["cgroup_driver"] = driver.value if driver else "none (no kubepods cgroup yet)"
        if self.topology is None:
            facts["topology_error"] = self.topology_error
        else:
            facts["cpus"] = len(self.topology.cpus)
            facts["sockets"] = len(self.topology.sockets)
            facts["numa_nodes"] = len(self.topology.numa_nodes)
            facts["threads_per_core"] = self.topology.threads_per_core
        if self.memory_bytes is None:
            facts["memory_error"] = self.memory_error
        else:
            facts["memory_bytes"] = self.memory_bytes
        return facts

    def log(self) -> None:
        facts = self.describe()
        if self.cgroup_error is not None or self.topology is None or self.memory_bytes is None:
            log.warning("host_detected", **facts)
        else:
            log.info("host_detected", **facts)
