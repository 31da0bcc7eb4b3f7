"""Pure arithmetic of the collectors: counters into rates and ratios.

Every function takes two readings and returns None when they cannot give an answer (no time
passed, or the counter went backwards because the cgroup was re-created under the same name);
the collector then skips that sample, as koordlet drops the first one after a start.
"""

from __future__ import annotations

from system.cgroup_readers import Throttling
from system.procfs import CpuTicks


def cores_from_ns(prev_t: float, prev_ns: int, now: float, cur_ns: int) -> float | None:
    """CPU cores used between two readings of a cumulative CPU time in nanoseconds."""
    elapsed = now - prev_t
    used = cur_ns - prev_ns
    if elapsed <= 0 or used < 0:
        return None
    return used / 1e9 / elapsed


def node_cores(prev_t: float, prev: CpuTicks, now: float, cur: CpuTicks, ticks_per_second: int) -> float | None:
    """koordlet's node usage: busy ticks (user+nice+system+irq+softirq+steal) over wall time."""
    elapsed = now - prev_t
    busy = cur.busy - prev.busy
    if elapsed <= 0 or busy < 0 or ticks_per_second <= 0:
        return None
    return busy / ticks_per_second / elapsed


def per_second(prev_t: float, prev: int, now: float, cur: int) -> float | None:
    """Rate of a monotonic counter (bytes, packets); None across a wrap or reset."""
    elapsed = now - prev_t
    if elapsed <= 0 or cur < prev:
        return None
    return (cur - prev) / elapsed


def throttled_ratio(prev: Throttling | tuple[int, int], cur: Throttling | tuple[int, int]) -> float | None:
    """Throttled periods over periods between two cpu.stat readings, each a Throttling or
    (nr_periods, nr_throttled) (koordlet's podthrottled collector); 0 when no period
    elapsed under a quota."""
    prev_periods, prev_throttled = (prev.nr_periods, prev.nr_throttled) if isinstance(prev, Throttling) else prev
    cur_periods, cur_throttled = (cur.nr_periods, cur.nr_throttled) if isinstance(cur, Throttling) else cur
    periods = cur_periods - prev_periods
    throttled = cur_throttled - prev_throttled
    if periods < 0 or throttled < 0:
        return None
    if periods == 0:
        return 0.0
    return min(1.0, throttled / periods)
