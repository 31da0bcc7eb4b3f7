"""Where the kube QoS tiers live in the cgroup tree, for the strategies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from system.cgroup_layout import CgroupDriver, QoSTier, kubepods_dir, qos_dir

DriverOf = Callable[[], "CgroupDriver | None"]


@dataclass(frozen=True, slots=True)
class QoSDirs:
    """The kubepods dirs for one driver, optionally below `prefix` (tests put them in a sandbox).

    `driver` is a fixed driver or a callable asked on every use (the daemon passes the host
    facts', which keep looking while kubelet has not made kubepods yet: until then the
    cgroupfs layout is assumed, which writes nothing where nothing exists)."""

    driver: CgroupDriver | DriverOf = CgroupDriver.CGROUPFS
    prefix: str = ""

    def _driver(self) -> CgroupDriver:
        if isinstance(self.driver, CgroupDriver):
            return self.driver
        return self.driver() or CgroupDriver.CGROUPFS

    def _under(self, relative: str) -> str:
        return f"{self.prefix.strip('/')}/{relative}" if self.prefix.strip("/") else relative

    @property
    def kubepods(self) -> str:
        return self._under(kubepods_dir(self._driver()))

    @property
    def besteffort(self) -> str:
        return self._under(qos_dir(self._driver(), QoSTier.BESTEFFORT))

    @property
    def burstable(self) -> str:
        return self._under(qos_dir(self._driver(), QoSTier.BURSTABLE))
