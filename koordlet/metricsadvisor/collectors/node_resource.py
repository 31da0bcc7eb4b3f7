"""Node CPU and memory usage from procfs (koordlet's noderesource collector, every 1 s).

CPU: busy ticks of the aggregate /proc/stat line between two ticks, over wall time, in
cores. Memory: MemTotal - MemAvailable. The first CPU figure needs two readings.
"""

from __future__ import annotations

import os

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.framework import CollectContext, CollectorUnsupported, PeriodicCollector
from koordlet.metricsadvisor.rates import node_cores
from system.errors import SystemFileError
from system.host import Host
from system.procfs import CpuTicks, read_cpu_ticks, read_meminfo

NODE_CPU = SeriesKey.of(Metric.NODE_CPU_USAGE_CORES)
NODE_MEMORY = SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES)


class NodeResourceCollector(PeriodicCollector):
    name = "noderesource"

    def __init__(self, interval: float, ticks_per_second: int | None = None) -> None:
        super().__init__(interval)
        self._hz = ticks_per_second or os.sysconf("SC_CLK_TCK")
        self._host: Host | None = None
        self._prev: tuple[float, CpuTicks] | None = None

    def setup(self, ctx: CollectContext) -> None:
        self._host = ctx.host
        try:
            read_cpu_ticks(ctx.host)
            read_meminfo(ctx.host)
        except SystemFileError as exc:
            raise CollectorUnsupported("procfs unreadable: %s" % exc) from exc

    def collect(self, now: float) -> list[tuple[SeriesKey, float]]:
        assert self._host is not None
        ticks = read_cpu_ticks(self._host)
        memory = read_meminfo(self._host)
        samples = [(NODE_MEMORY, float(memory.used_bytes))]
        prev, self._prev = self._prev, (now, ticks)
        if prev is not None:
            cores = node_cores(prev[0], prev[1], now, ticks, self._hz)
            if cores is not None:
                samples.append((NODE_CPU, cores))
        return samples
