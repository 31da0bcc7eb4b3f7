"""Detect the kubelet cgroup driver from what exists on the host (the IO half of layout)."""

from __future__ import annotations

import structlog

from system.cgroup_files import CgroupFiles
from system.cgroup_layout import CgroupDriver, driver_from_names
from system.errors import NotSupported

log = structlog.get_logger(__name__)

# controllers whose root is checked, in order (any mounted one will do)
_PROBE_SUBSYSTEMS = ("cpu", "memory", "cpuset", "pids")


def detect_host_driver(files: CgroupFiles) -> CgroupDriver | None:
    """Look for kubepods.slice / kubepods under a controller root; None if neither exists."""
    for subsystem in _PROBE_SUBSYSTEMS:
        try:
            root = files.subsystem_dir(subsystem, "")
        except NotSupported:
            continue
        names = {
            name for name in ("kubepods.slice", "kubepods") if (root / name).is_dir()
        }
        driver = driver_from_names(names)
        if driver is not None:
            log.debug("cgroup_driver_detected", driver=driver.value, root=str(root))
            return driver
    return None
