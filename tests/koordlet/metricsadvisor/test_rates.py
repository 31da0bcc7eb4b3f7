"""Counter arithmetic with hand-computed values."""

from __future__ import annotations

import pytest

from koordlet.metricsadvisor.rates import cores_from_ns, node_cores, per_second, throttled_ratio
from system.cgroup_readers import Throttling
from system.procfs import CpuTicks


def test_cores_from_cpu_time():
    assert cores_from_ns(10.0, 1_000_000_000, 12.0, 4_000_000_000) == 1.5  # 3 s of CPU in 2 s
    assert cores_from_ns(10.0, 5, 10.0, 9) is None  # no time passed
    assert cores_from_ns(10.0, 5_000, 11.0, 10) is None  # counter reset: cgroup re-created


def test_node_cores_count_busy_ticks_only():
    before = CpuTicks(user=100, nice=0, system=50, idle=1000, iowait=30, irq=0, softirq=0, steal=0)
    after = CpuTicks(user=200, nice=10, system=90, idle=1100, iowait=90, irq=5, softirq=5, steal=0)
    # busy: +100 user +10 nice +40 system +5 irq +5 softirq = 160 ticks at 100 Hz over 2 s
    assert node_cores(0.0, before, 2.0, after, 100) == pytest.approx(0.8)


def test_per_second_and_wrap():
    assert per_second(0.0, 1000, 4.0, 9000) == 2000.0
    assert per_second(0.0, 9000, 4.0, 10) is None


@pytest.mark.parametrize("before, after, ratio", [
    (Throttling(100, 10, 0), Throttling(200, 35, 0), 0.25),
    (Throttling(100, 10, 0), Throttling(100, 10, 0), 0.0),
    (Throttling(100, 10, 0), Throttling(50, 5, 0), None),
])
def test_throttled_ratio_between_reads(before, after, ratio):
    assert throttled_ratio(before, after) == ratio
