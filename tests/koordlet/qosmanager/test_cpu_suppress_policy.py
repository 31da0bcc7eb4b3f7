"""CPU suppress decisions against koordlet v1.1's formulas and its published test cases
(pkg/koordlet/resmanager/cpu_suppress_test.go)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from koordlet.qosmanager.cpu_suppress_policy import (
    be_cfs_quota,
    be_cpuset_size,
    be_suppress_budget,
    pick_cpus,
    split_between_pools,
)
from system.topology import CpuInfo

PERIOD = 100_000


def test_budget_counts_unknown_pods_as_ls_and_never_negative_system_usage():
    # 10 cores at 65 %: 6500m; node uses 5000m; LS 2000m, BE 1000m, a pod unknown to the informer 500m.
    budget = be_suppress_budget(10_000, 65, 5000, {"ls": 2000, "be": 1000, "ghost": 500}, ["be"])
    assert budget.threshold_milli == 6500
    assert budget.ls_used_milli == 2500
    assert budget.system_used_milli == 1500
    assert budget.be_milli == 6500 - 2500 - 1500
    # pods report more than the node (sampling skew): system usage is 0, not negative
    assert be_suppress_budget(10_000, 65, 1000, {"ls": 2000}, []).system_used_milli == 0


def test_cpuset_size_minimum_two_cores():
    assert be_cpuset_size(-3000, 8, 16) == 2
    assert be_cpuset_size(0, 8, 16) == 2
    assert be_cpuset_size(1001, 8, 16) == 2
    assert be_cpuset_size(2001, 2, 16) == 3  # ceil


def test_cpuset_growth_capped_at_ten_percent_of_node_cpus_per_round():
    # 16 CPUs: cap ceil(1.6) = 2 per round (koordlet "slow scale up")
    assert be_cpuset_size(12_000, 3, 16) == 5
    assert be_cpuset_size(5_000, 3, 16) == 5  # exactly the cap
    assert be_cpuset_size(4_000, 3, 16) == 4
    assert be_cpuset_size(1_000, 12, 16) == 2  # shrinking is never capped


@given(st.integers(-100_000, 100_000), st.integers(0, 64), st.integers(2, 64))
def test_cpuset_size_bounds(be_milli, current, node_cpus):
    size = be_cpuset_size(be_milli, current, node_cpus)
    cap = -(-node_cpus // 10)  # ceil(10 %)
    assert size <= node_cpus
    assert size - current <= cap  # the growth cap wins even over the 2-core minimum, as in koordlet
    assert size >= min(2, current + cap, node_cpus)


def infos(*rows: tuple[int, int, int, int]) -> list[CpuInfo]:
    return [CpuInfo(cpu, core, socket, node, node) for cpu, core, socket, node in rows]


@pytest.mark.parametrize("count, pool, want", [
    (0, [], []),
    (3, infos((0, 0, 0, 0), (1, 1, 0, 0), (2, 2, 1, 1), (3, 3, 1, 1),
              (4, 0, 0, 0), (5, 1, 0, 0), (6, 2, 1, 1), (7, 3, 1, 1)), [0, 4, 2]),
    (3, infos((0, 0, 0, 0), (1, 0, 0, 0), (2, 1, 0, 0), (3, 1, 0, 0),
              (4, 2, 1, 1), (5, 2, 1, 1), (6, 3, 1, 1), (7, 3, 1, 1)), [0, 1, 4]),
    (5, infos(*[(cpu, cpu // 2, cpu // 4, cpu // 8) for cpu in range(16)]), [0, 1, 4, 5, 8]),
    (5, infos(*[(cpu, cpu // 2, cpu // 4, cpu // 8) for cpu in (12, 13, 14, 2, 3, 11, 4, 5, 8, 15, 0, 1,
                                                                9, 10, 6, 7)]), [0, 1, 4, 5, 8]),
])
def test_pick_cpus_koordlet_cases(count, pool, want):
    assert pick_cpus(count, pool) == sorted(want)


def test_pick_cpus_refuses_more_than_the_pool():
    assert pick_cpus(3, infos((0, 0, 0, 0), (1, 1, 0, 0))) == []


def test_pools_split_in_proportion_lsr_rounds_down():
    assert split_between_pools(5, 4, 12) == (1, 4)
    assert split_between_pools(4, 0, 16) == (0, 4)
    assert split_between_pools(3, 0, 0) == (0, 3)


@pytest.mark.parametrize("be_milli, current, want", [
    (20_000, 10 * PERIOD, 10 * PERIOD + int(0.1 * 80 * PERIOD)),  # growth capped at 10 % of 80 cores
    (20_000, 19 * PERIOD, 20 * PERIOD),
    (20_000, 24 * PERIOD, 20 * PERIOD),  # shrinking is not capped
    (20_000, int(19.8 * PERIOD), None),  # |delta| < 1 % of the node: left alone
    (1, int(0.8 * PERIOD), 2000),  # minimum quota 2000 us is written even for a small delta
])
def test_cfs_quota_koordlet_cases(be_milli, current, want):
    assert be_cfs_quota(be_milli, current, 80) == want


def test_cfs_quota_minimum_and_unlimited_start():
    assert be_cfs_quota(-5_000, 50 * PERIOD, 80) == 2000
    assert be_cfs_quota(0, 2000, 80) is None  # already at the minimum
    # from -1 (unlimited) a budget below the node is a decrease: written as computed
    assert be_cfs_quota(6_500, -1, 10) == 650_000
