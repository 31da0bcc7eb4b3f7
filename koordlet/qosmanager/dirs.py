"""Where the kube QoS tiers live in the cgroup tree, for the strategies."""

from __future__ import annotations

from dataclasses import dataclass

from system.cgroup_layout import CgroupDriver, QoSTier, kubepods_dir, qos_dir


@dataclass(frozen=True, slots=True)
class QoSDirs:
    """The kubepods dirs for one driver, optionally below `prefix` (tests put them in a sandbox)."""

    driver: CgroupDriver = CgroupDriver.CGROUPFS
    prefix: str = ""

    def _under(self, relative: str) -> str:
        return f"{self.prefix.strip('/')}/{relative}" if self.prefix.strip("/") else relative

    @property
    def kubepods(self) -> str:
        return self._under(kubepods_dir(self.driver))

    @property
    def besteffort(self) -> str:
        return self._under(qos_dir(self.driver, QoSTier.BESTEFFORT))

    @property
    def burstable(self) -> str:
        return self._under(qos_dir(self.driver, QoSTier.BURSTABLE))
