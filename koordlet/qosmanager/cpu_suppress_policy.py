"""CPU suppress decisions (koordlet resmanager/cpu_suppress.go, v1.1): pure functions.

    BE = allocatable.cpu * threshold% - LS.used - system.used
    system.used = max(0, node.used - sum(pod.used)); pods not known as BE count as LS

cpuset policy: ceil(BE) CPUs, at least 2, growing by at most ceil(10 % of node CPUs) a
round; taken from the LSR and LS pools in proportion (never LSE CPUs), whole cores first,
spread over NUMA nodes. cfsQuota policy: BE milli-cores * period / 1000, at least 2000 us,
unchanged while the change is under 1 % of the node, growing by at most 10 % of the node
a round.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from system.topology import CpuInfo

CFS_PERIOD_US = 100_000
BE_MIN_QUOTA_US = 2_000
BE_MIN_CPUS = 2
BE_MAX_INCREASE_RATIO = 0.1
QUOTA_BYPASS_DELTA_RATIO = 0.01
UNLIMITED_QUOTA = -1


@dataclass(frozen=True, slots=True)
class SuppressBudget:
    """The BE CPU budget in milli-cores and the terms it came from."""

    be_milli: int
    threshold_milli: int
    ls_used_milli: int
    system_used_milli: int


def be_suppress_budget(allocatable_milli: int, threshold_percent: int, node_used_milli: int,
                       pod_used_milli: Mapping[str, int], be_uids: Iterable[str]) -> SuppressBudget:
    be = set(be_uids)
    return be_suppress_budget_of(allocatable_milli, threshold_percent, node_used_milli,
                                 sum(pod_used_milli.values()),
                                 sum(used for uid, used in pod_used_milli.items() if uid not in be))


def be_suppress_budget_of(allocatable_milli: int, threshold_percent: int, node_used_milli: int,
                          all_pods_milli: int, ls_used_milli: int) -> SuppressBudget:
    """`be_suppress_budget` from the sums (every known pod's usage, the non-BE pods' part)."""
    ls_used = ls_used_milli
    system_used = max(0, node_used_milli - all_pods_milli)
    threshold = allocatable_milli * threshold_percent // 100
    return SuppressBudget(threshold - ls_used - system_used, threshold, ls_used, system_used)


def be_cpuset_size(be_milli: int, current_size: int, node_cpus: int) -> int:
    """How many CPUs the BE cpuset gets this round."""
    wanted = max(math.ceil(be_milli / 1000), BE_MIN_CPUS)
    max_increase = math.ceil(node_cpus * BE_MAX_INCREASE_RATIO)
    if wanted - current_size > max_increase:
        wanted = current_size + max_increase
    return min(wanted, node_cpus)


def split_between_pools(size: int, lsr_pool: int, ls_pool: int) -> tuple[int, int]:
    """(from LSR, from LS): LSR's share rounds down, LS takes the rest."""
    total = lsr_pool + ls_pool
    from_lsr = size * lsr_pool // total if total else 0
    return from_lsr, size - from_lsr


def pick_cpus(count: int, pool: Iterable[CpuInfo]) -> list[int]:
    """`count` CPUs from `pool`: whole cores (both hyperthreads) first, round-robin over
    NUMA buckets (bigger buckets first), then single CPUs the same way. Empty when the
    pool is smaller than `count` (koordlet refuses rather than under-deliver)."""
    cpus = list(pool)
    if count <= 0 or len(cpus) < count:
        return []
    buckets: dict[tuple[int, int], list[CpuInfo]] = {}
    for info in cpus:
        buckets.setdefault((info.socket, info.numa_node), []).append(info)
    ordered = [sorted(bucket, key=lambda i: (i.core, i.cpu)) for bucket in buckets.values()]
    ordered.sort(key=lambda bucket: (-len(bucket), bucket[0].cpu))
    used: set[int] = set()

    def whole_core(bucket: list[CpuInfo]) -> list[int]:
        for first, second in zip(bucket, bucket[1:]):
            if first.cpu not in used and second.cpu not in used and first.core == second.core:
                return [first.cpu, second.cpu]
        return []

    def single(bucket: list[CpuInfo]) -> list[int]:
        return next(([info.cpu] for info in bucket if info.cpu not in used), [])

    picked: list[int] = []
    cursor = 0  # the single-CPU pass goes on from the bucket after the last whole core
    for choose, size in ((whole_core, 2), (single, 1)):
        misses = 0
        while count - len(picked) >= size and misses < len(ordered):
            chosen = choose(ordered[cursor])
            used.update(chosen)
            picked += chosen
            misses = 0 if chosen else misses + 1
            cursor = (cursor + 1) % len(ordered)
    return sorted(picked)


def be_cfs_quota(be_milli: int, current_quota: int, node_capacity_cores: int) -> int | None:
    """The BE tier's new cfs quota, or None when the change is too small to write.

    From an unlimited quota (-1) every budget is a decrease, so the growth cap measures
    from the node's whole capacity (koordlet v1.1 measured from -1 and wrote 10 % of the
    node on the first round whatever the budget).
    """
    new = max(be_milli * CFS_PERIOD_US // 1000, BE_MIN_QUOTA_US)
    node_quota = node_capacity_cores * CFS_PERIOD_US
    current = node_quota if current_quota == UNLIMITED_QUOTA else current_quota
    if abs(new - current) < node_quota * QUOTA_BYPASS_DELTA_RATIO and new != BE_MIN_QUOTA_US:
        return None
    max_increase = int(node_quota * BE_MAX_INCREASE_RATIO)
    if new - current > max_increase:
        new = current + max_increase
    if new == current_quota:
        return None
    return new
