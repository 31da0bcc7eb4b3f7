"""The QoS manager's options (koordlet's resmanager flags)."""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.config import defaults
from koordlet.config.option import option
from koordlet.config.parsers import parse_bool, parse_positive_int


@dataclass(frozen=True, slots=True)
class QoSOptions:
    qos_standalone_eviction: bool = option(
        False, "standalone mode only: let BE memory/CPU eviction kill the best-effort pod's processes (v2 "
        "`cgroup.kill`; v1 SIGKILL to every pid of the pod's cgroups until empty). Never touches non-BE pods."
        " Off: evictions are logged, not done. With a kubeconfig (or in a pod) evictions go through the "
        "Eviction API instead",
        parse_bool)
    cpu_suppress_interval_seconds: int = option(
        defaults.CPU_SUPPRESS_INTERVAL_SECONDS, "BE CPU suppress interval", parse_positive_int)
    cpu_evict_interval_seconds: int = option(
        defaults.CPU_EVICT_INTERVAL_SECONDS, "BE CPU evict interval", parse_positive_int)
    memory_evict_interval_seconds: int = option(
        defaults.MEMORY_EVICT_INTERVAL_SECONDS, "BE memory evict interval", parse_positive_int)
    reconcile_interval_seconds: int = option(
        defaults.RECONCILE_INTERVAL_SECONDS, "CPU burst, memory QoS and resctrl interval", parse_positive_int)
    memory_evict_cool_time_seconds: int = option(
        defaults.MEMORY_EVICT_COOL_TIME_SECONDS, "quiet time after a memory eviction", parse_positive_int)
    cpu_evict_cool_time_seconds: int = option(
        defaults.CPU_EVICT_COOL_TIME_SECONDS, "quiet time after a CPU eviction", parse_positive_int)
