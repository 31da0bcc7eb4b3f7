"""The BE tier's current CPU suppress decision, published by the QoS manager's CPU suppress
and read by the runtime hooks (CPUSetAllocator, BatchResource) so they never undo it.

koordlet's cpuset hook gives BE containers the BE tier's cpuset as suppress set it, and its
batch-resource hook leaves BE quotas unset under the cfsQuota policy. Here the decision is a
value on the hub instead of a read of the tier's files, so the hooks' policy stays pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import structlog

log = structlog.get_logger(__name__)

UNLIMITED_QUOTA = -1


@dataclass(frozen=True, slots=True)
class BESuppress:
    """cpus: the BE tier's cpuset while the cpuset policy suppresses it (None: not suppressed).
    cfs_quota_us: the BE tier's CFS quota (-1: unlimited)."""

    cpus: frozenset[int] | None = None
    cfs_quota_us: int = UNLIMITED_QUOTA


NOT_SUPPRESSED = BESuppress()


def quota_under_tier(own: int, tier: int) -> int:
    """A BE child's CFS quota under the tier's (-1: unlimited). cgroup v1 refuses (EINVAL) a
    child quota above a limited parent's, so a child is held at most at the tier's value; an
    unlimited child takes the tier's value, so that shrinking the tier writes children first
    (the executor's levelled order) and no write order is ever refused."""
    if tier == UNLIMITED_QUOTA:
        return own
    return tier if own == UNLIMITED_QUOTA else min(own, tier)


BESuppressListener = Callable[[BESuppress], None]


class BESuppressBoard:
    """The one current BESuppress on the node (a hub value), with change listeners."""

    def __init__(self) -> None:
        self._value = NOT_SUPPRESSED
        self._listeners: list[BESuppressListener] = []

    def current(self) -> BESuppress:
        return self._value

    def publish(self, value: BESuppress) -> None:
        if value == self._value:
            return
        self._value = value
        for listener in list(self._listeners):
            try:
                listener(value)
            except Exception:  # a listener's bug must not stop the others
                log.exception("be_suppress_listener_failed")

    def subscribe(self, listener: BESuppressListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)
