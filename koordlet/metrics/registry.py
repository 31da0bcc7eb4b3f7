"""The daemon's Prometheus registry with the process and build metrics.

Modules receive this registry and register their own collectors on it; nothing
uses prometheus_client's global default registry, so tests can build many.
"""

from __future__ import annotations

import platform
import time

from prometheus_client import (
    CollectorRegistry,
    Gauge,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
)

from koordlet import __version__


def new_registry(node_name: str, now: float | None = None) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    build = Gauge("koordlet_build_info", "Build information of the running koordlet.",
                  ["version", "python_version"], registry=registry)
    build.labels(version=__version__, python_version=platform.python_version()).set(1)
    started = time.time() if now is None else now
    start = Gauge("koordlet_start_time_seconds", "Unix time at which the daemon started.",
                  ["node"], registry=registry)
    start.labels(node=node_name).set(started)
    koordlet_start = Gauge("koordlet_start_time", "the start time of koordlet", ["node"], registry=registry)
    koordlet_start.labels(node=node_name).set(started)  # koordlet's name for the same figure
    return registry


def record_host_probe(registry: CollectorRegistry, node_name: str, cpu_info_ok: bool, numa_info_ok: bool) -> None:
    """koordlet's collect_node_{cpu,numa}_info_status: 1 under the probe's outcome."""
    for what, ok in (("cpu", cpu_info_ok), ("numa", numa_info_ok)):
        gauge = Gauge(f"koordlet_collect_node_{what}_info_status", f"the count of node {what} info collected by "
                      "status", ["node", "status"], registry=registry)
        gauge.labels(node=node_name, status="succeeded" if ok else "failed").set(1)
