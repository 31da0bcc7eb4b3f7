"""The daemon's Prometheus registry with the process and build metrics.

Modules receive this registry and register their own collectors on it; nothing
uses prometheus_client's global default registry, so tests can build many.
"""

from __future__ import annotations

import platform
import time

from prometheus_client import CollectorRegistry, Gauge, GCCollector, PlatformCollector, ProcessCollector

from koordlet import __version__


def new_registry(node_name: str, now: float | None = None) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    build = Gauge("koordlet_build_info", "Build information of the running koordlet.",
                  ["version", "python_version"], registry=registry)
    build.labels(version=__version__, python_version=platform.python_version()).set(1)
    start = Gauge("koordlet_start_time_seconds", "Unix time at which the daemon started.",
                  ["node"], registry=registry)
    start.labels(node=node_name).set(time.time() if now is None else now)
    return registry
