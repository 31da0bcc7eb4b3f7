"""kernel.sched_group_identity_enabled: the switch newer Anolis kernels put in front of
group identity (cpu.bvt_warp_ns takes effect only while it is 1; older ones have bvt
without the switch).

`wanted_switch` is the rule: 1 while any class has its cpuQOS on, 0 when none has, no
opinion while no NodeSLO is in force. `GroupIdentitySwitch` reads the sysctl and writes it
only when it differs; when it cannot be set on, bvt writes are skipped (logged once per
reason) because they would do nothing.
"""

from __future__ import annotations

import structlog

from system.host import Host

log = structlog.get_logger(__name__)

SYSCTL = ("sys", "kernel", "sched_group_identity_enabled")


def wanted_switch(rule_in_force: bool, any_class_enabled: bool) -> int | None:
    if not rule_in_force:
        return None
    return 1 if any_class_enabled else 0


class GroupIdentitySwitch:
    def __init__(self, host: Host) -> None:
        self.path = host.proc(*SYSCTL)
        self._logged: str | None = None

    def exists(self) -> bool:
        return self.path.is_file()

    def apply(self, wanted: int | None) -> bool:
        """Make the sysctl `wanted` (None: leave it); whether bvt writes can take effect."""
        if wanted is None or not self.exists():
            return True
        try:
            if self.path.read_text().strip() != str(wanted):
                self.path.write_text("%d\n" % wanted)
                log.info("group_identity_sysctl_set", sysctl="kernel.sched_group_identity_enabled", value=wanted)
        except OSError as exc:
            reason = "%s=%d: %s" % ("kernel.sched_group_identity_enabled", wanted, exc.strerror or exc)
            if reason != self._logged:
                self._logged = reason
                log.warning("group_identity_sysctl_unset", error=reason,
                            consequence="bvt writes skipped" if wanted else "bvt stays switched on")
            return wanted == 0  # values of 0 are harmless with the switch left on
        self._logged = None
        return True
