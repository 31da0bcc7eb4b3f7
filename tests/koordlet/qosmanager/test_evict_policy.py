"""Eviction decisions: memory release and order, CPU satisfaction release and order
(koordlet v1.1 resmanager/memory_evict.go, cpu_evict.go; anchors §2.6)."""

from __future__ import annotations

import pytest

from koordlet.qosmanager.cpu_evict import (
    BECPUSample,
    be_usage_high_enough,
    cpu_to_release,
    release_for,
    satisfaction_config_valid,
)
from koordlet.qosmanager.memory_evict import memory_to_release
from koordlet.qosmanager.victims import (
    Candidate,
    CoolDown,
    memory_released,
    order_cpu_victims,
    order_memory_victims,
    request_released,
    take_until,
)

GiB = 1 << 30


def test_memory_release_from_threshold_to_lower():
    # 100 GiB node at 75 % with threshold 70 / lower 68: release 7 % of capacity
    assert memory_to_release(100 * GiB, 75 * GiB, 70, 68) == 7 * GiB
    assert memory_to_release(100 * GiB, 70 * GiB, 70, 68) == 2 * GiB  # at the threshold: evict
    assert memory_to_release(100 * GiB, 70 * GiB - 1, 70, 68) == 0  # integer percent 69: below
    assert memory_to_release(0, 1, 70, 68) == 0


def test_memory_victims_priority_then_usage_then_unknown_by_name():
    pods = [Candidate("a", "a", 5000, 1 * GiB), Candidate("b", "b", 3000, 1 * GiB),
            Candidate("c", "c", 5000, 4 * GiB), Candidate("d", "d", 5000, None),
            Candidate("e", "e", 5000, None), Candidate("f", "f", 3000, 2 * GiB)]
    assert [c.uid for c in order_memory_victims(pods)] == ["f", "b", "c", "a", "e", "d"]


def test_memory_victims_stop_once_enough_is_released():
    ordered = [Candidate("x", "x", 1, 3 * GiB), Candidate("y", "y", 1, 2 * GiB), Candidate("z", "z", 1, GiB)]
    assert [c.uid for c in take_until(ordered, 4 * GiB, memory_released)] == ["x", "y"]
    assert [c.uid for c in take_until(ordered, 3 * GiB, memory_released)] == ["x"]
    assert take_until(ordered, 0, memory_released) == []


@pytest.mark.parametrize("lower, upper, valid", [
    (None, None, False), (40, None, False), (0, 50, False), (60, 80, True), (61, 80, False),
    (40, 100, False), (40, 40, True), (50, 40, False),
])
def test_satisfaction_config_ranges(lower, upper, valid):
    assert satisfaction_config_valid(lower, upper) is valid


def test_cpu_release_is_request_times_gap_to_upper():
    # request 10 cores, real limit 3 cores: satisfaction 0.3 < lower 0.4; release 10 * (0.8 - 0.3)
    assert cpu_to_release(10_000, 3_000, 40, 80) == 5_000
    assert cpu_to_release(10_000, 4_000, 40, 80) == 4_000  # at lower: still evicts (only > lower stops)
    assert cpu_to_release(10_000, 4_001, 40, 80) == 0
    assert cpu_to_release(0, 3_000, 40, 80) == 0


def test_be_usage_must_be_high_enough():
    assert be_usage_high_enough(2_700, 3_000, 90)
    assert not be_usage_high_enough(2_600, 3_000, 90)
    assert be_usage_high_enough(0, 500, 90)  # under one core: no usage check
    assert not be_usage_high_enough(1_000, 0, 90)


def test_window_needs_a_third_of_its_samples_and_takes_the_smaller_release():
    busy = BECPUSample(0, 3_000, 10_000, 2_900)
    assert release_for(busy, 1, busy, 6.0, 40, 80, 90) == 0  # 1 sample * 1 s < 6 s / 3
    assert release_for(busy, 2, busy, 6.0, 40, 80, 90) == 5_000
    # window average limit 3300 -> 4700; current 3900 -> 4100: the smaller wins
    assert release_for(BECPUSample(0, 3_300, 10_000, 3_200), 3, BECPUSample(0, 3_900, 10_000, 3_800),
                       6.0, 40, 80, 90) == 4_100
    idle_now = BECPUSample(0, 3_000, 10_000, 1_000)
    assert release_for(busy, 3, idle_now, 6.0, 40, 80, 90) == 0


def test_cpu_victims_priority_then_usage_over_request():
    pods = [Candidate("a", "a", 5000, 1_000, 2_000), Candidate("b", "b", 5000, 1_900, 2_000),
            Candidate("c", "c", 3000, 100, 1_000), Candidate("d", "d", None, 3_000, 1_000)]
    ordered = order_cpu_victims(pods)
    assert [c.uid for c in ordered] == ["d", "c", "b", "a"]  # no priority counts as 0, the lowest
    assert [c.uid for c in take_until(ordered, 1_500, request_released)] == ["d", "c"]


def test_a_cool_down_starts_only_with_an_eviction_that_happened():
    quiet = CoolDown(4.0)
    assert not quiet.active(100.0)
    quiet.evicted(100.0)
    assert quiet.active(103.9) and not quiet.active(104.0)
