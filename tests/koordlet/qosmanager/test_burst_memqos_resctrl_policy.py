"""CPU burst, memory QoS and resctrl decisions (koordlet v1.1 formulas, anchors §2.6)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from koordlet.qosmanager.cpu_burst_policy import (
    BurstLimiter,
    CFSOperation,
    NodeBurstState,
    adjust_by_node,
    container_operation,
    node_burst_state,
    static_burst_us,
    target_quota,
)
from koordlet.qosmanager.memory_qos import UNLIMITED, memory_qos_values
from koordlet.qosmanager.resctrl import class_schemata, l3_mask
from koordlet.slo.node_slo import MemoryQOS, ResctrlQOS

MiB = 1 << 20


def test_static_burst_is_limit_times_percent_of_a_period():
    assert static_burst_us(2_000, 1000) == 2_000_000  # 2 cores * 1000 % * 100000 us
    assert static_burst_us(500, 100) == 50_000
    assert static_burst_us(0, 1000) == 0


def test_share_pool_states():
    # 16 CPUs, 4 requested by LSR: pool 12; threshold 50 % -> overload >= 6, cooling >= 5.4
    assert node_burst_state(16, 10, 4, 4, 50) is NodeBurstState.OVERLOAD  # 6 / 12
    assert node_burst_state(16, 9.5, 4, 4, 50) is NodeBurstState.COOLING  # 5.5 / 12
    assert node_burst_state(16, 9.3, 4, 4, 50) is NodeBurstState.IDLE  # 5.3 / 12
    assert node_burst_state(4, 1, 4, 0, 50) is NodeBurstState.OVERLOAD  # no pool left


def test_operations_follow_throttling_and_node_state():
    assert container_operation(False, True, 0.5) is CFSOperation.RESET
    assert container_operation(True, False, 0.5) is CFSOperation.SCALE_DOWN
    assert container_operation(True, True, None) is CFSOperation.REMAIN
    assert container_operation(True, True, 0.0) is CFSOperation.REMAIN
    assert container_operation(True, True, 0.1) is CFSOperation.SCALE_UP
    assert adjust_by_node(NodeBurstState.OVERLOAD, CFSOperation.SCALE_UP) is CFSOperation.SCALE_DOWN
    assert adjust_by_node(NodeBurstState.OVERLOAD, CFSOperation.REMAIN) is CFSOperation.SCALE_DOWN
    assert adjust_by_node(NodeBurstState.COOLING, CFSOperation.SCALE_UP) is CFSOperation.REMAIN
    assert adjust_by_node(NodeBurstState.UNKNOWN, CFSOperation.SCALE_UP) is CFSOperation.REMAIN
    assert adjust_by_node(NodeBurstState.IDLE, CFSOperation.SCALE_UP) is CFSOperation.SCALE_UP
    assert adjust_by_node(NodeBurstState.OVERLOAD, CFSOperation.RESET) is CFSOperation.RESET


def test_quota_scales_by_steps_within_base_and_ceiling():
    base = 200_000  # 2 cores
    assert target_quota(CFSOperation.SCALE_UP, base, base, 300) == 240_000  # x1.2
    assert target_quota(CFSOperation.SCALE_UP, 550_000, base, 300) == 600_000  # ceiling 300 %
    assert target_quota(CFSOperation.SCALE_DOWN, 240_000, base, 300) == 200_000  # x0.8 floored at base
    assert target_quota(CFSOperation.SCALE_DOWN, 400_000, base, 300) == 320_000
    assert target_quota(CFSOperation.RESET, 400_000, base, 300) == base
    assert target_quota(CFSOperation.SCALE_UP, base, base, 100) == base  # no room above 100 %


@given(st.sampled_from(list(CFSOperation)), st.integers(1000, 10**7), st.integers(1000, 10**6),
       st.integers(0, 1000))
def test_quota_always_between_base_and_ceiling(operation, current, base, percent):
    target = target_quota(operation, current, base, percent)
    assert base <= target <= max(base, int(base * percent / 100))


def test_token_bucket_spends_saves_and_clamps():
    limiter = BurstLimiter.new(10, 300, now=0.0, rng=random.Random(1))
    assert limiter.capacity == 2000  # 10 s * (300 - 100)
    assert 0 <= limiter.tokens < 1000  # starts below half
    limiter.tokens = 500
    assert limiter.allow(1.0, 250)  # 150 spent
    assert limiter.tokens == 350
    assert not limiter.allow(4.0, 250) and limiter.tokens == -100  # 450 spent
    assert limiter.allow(6.0, 40) and limiter.tokens == 20  # 60 % idle * 2 s saved
    assert limiter.allow(7.0, 80) and limiter.tokens == 20  # 60..100 %: neither
    limiter.allow(1000.0, 0)
    assert limiter.tokens == 2000  # clamped at capacity
    assert limiter.expired(1021.0) and not limiter.expired(1019.0)  # 2 x period idle


def test_memory_qos_values_and_never_high_below_min():
    cfg = MemoryQOS(enable=True, min_limit_percent=100, low_limit_percent=50, throttling_percent=80)
    values = memory_qos_values(512 * MiB, 1024 * MiB, 8192 * MiB, cfg)
    # min = request (100 %), low = 50 % of request raised to min, high = 80 % of the limit
    assert (values.min, values.low, values.high) == (512 * MiB, 512 * MiB, 858_993_459)
    no_limit = memory_qos_values(512 * MiB, 0, 8192 * MiB, cfg)
    assert no_limit.high == 8192 * MiB * 80 // 100  # node allocatable stands in for a missing limit
    tight = memory_qos_values(1024 * MiB, 1024 * MiB, 0, MemoryQOS(min_limit_percent=100, throttling_percent=50))
    assert tight.high == tight.min == 1024 * MiB  # high never below min
    off = memory_qos_values(1024 * MiB, 1024 * MiB, 0, MemoryQOS())
    assert (off.min, off.low, off.high) == (0, 0, UNLIMITED)


@pytest.mark.parametrize("cbm, start, end, mask", [
    (0x3FF, 10, 80, 0xFE),  # koordlet's documented examples (util/system/resctrl.go)
    (0x7FF, 10, 50, 0x3C),
    (0x7FF, 0, 30, 0xF),
    (0x7FF, 0, 100, 0x7FF),
])
def test_l3_mask_examples(cbm, start, end, mask):
    assert l3_mask(cbm, start, end) == mask


@pytest.mark.parametrize("cbm, start, end", [(0x7F0, 0, 50), (0, 0, 50), (0x7FF, 50, 50), (0x7FF, -1, 50)])
def test_l3_mask_refuses_bad_input(cbm, start, end):
    with pytest.raises(ValueError):
        l3_mask(cbm, start, end)


def test_class_schemata_lines():
    cfg = ResctrlQOS(enable=True, cat_range_start_percent=0, cat_range_end_percent=30, mba_percent=50)
    assert class_schemata(0x7FF, [1, 0], [0, 1], cfg) == {"L3": {0: "f", 1: "f"}, "MB": {0: "50", 1: "50"}}
    assert class_schemata(None, [0], [], cfg) == {}


def test_tier_protection_sums_pods_per_tier_and_in_kubepods():
    from koordlet.qosmanager.memory_qos import MemoryQoSValues, tier_protection

    pods = [("kubepods/burstable", MemoryQoSValues(100, 200, -1)),
            ("kubepods/burstable", MemoryQoSValues(10, 20, -1)),
            ("kubepods/besteffort", MemoryQoSValues(0, 5, -1)),
            ("kubepods", MemoryQoSValues(1000, 1000, -1))]  # guaranteed: directly below kubepods
    assert tier_protection(pods, "kubepods") == {"kubepods": (1110, 1225), "kubepods/burstable": (110, 220),
                                                 "kubepods/besteffort": (0, 5)}
    assert tier_protection([], "kubepods") == {"kubepods": (0, 0)}
