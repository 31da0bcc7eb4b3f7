"""The BE tier's current CPU suppress decision, published by the QoS manager's CPU suppress
and read by the runtime hooks (CPUSetAllocator, BatchResource) so they never undo it.

koordlet's cpuset hook gives BE containers the BE tier's cpuset as suppress set it, and its
batch-resource hook leaves BE quotas unset under the cfsQuota policy. Here the decision is a
value on the hub instead of a read of the tier's files, so the hooks' policy stays pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from koordlet.util.board import Board

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


class BESuppressBoard(Board[BESuppress]):
    """The one current BESuppress on the node (a board the root makes): CPU suppress
    publishes, the runtime hooks subscribe."""

    def __init__(self) -> None:
        super().__init__("be-suppress", NOT_SUPPRESSED)
