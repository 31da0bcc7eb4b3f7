"""The QoS manager agent: which strategies run (feature gates) and with what intervals; the
manager and the context they share are assembled in koordlet.qosmanager.assembly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import structlog

from koordlet.agent import NOTHING, AgentSpec, Built
from koordlet.qosmanager.options import QoSOptions

if TYPE_CHECKING:
    from koordlet.config import Config
    from koordlet.hubs import Hubs
    from koordlet.qosmanager.framework import Strategy

log = structlog.get_logger(__name__)


# Each strategy's module is imported only when its gate is on (the two evictions are off by
# default, and with every gate off the manager is not built at all).
def _cpu_suppress(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.cpu_suppress import CPUSuppress
    return CPUSuppress(interval=options.cpu_suppress_interval_seconds)


def _memory_evict(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.memory_evict import MemoryEvict
    return MemoryEvict(interval=options.memory_evict_interval_seconds, cool_down=options.memory_evict_cool_time_seconds)


def _cpu_evict(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.cpu_evict import CPUEvict
    return CPUEvict(interval=options.cpu_evict_interval_seconds, cool_down=options.cpu_evict_cool_time_seconds)


def _cpu_burst(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.cpu_burst import CPUBurst
    return CPUBurst(interval=options.reconcile_interval_seconds)


def _memory_qos(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.memory_qos import MemoryQoS
    return MemoryQoS(interval=options.reconcile_interval_seconds)


def _resctrl(options: QoSOptions) -> Strategy:
    from koordlet.qosmanager.resctrl import ResctrlQoS
    return ResctrlQoS(interval=options.reconcile_interval_seconds)


# (feature gate, its strategy), in koordlet's order; each strategy's own `gate` is the same name
STRATEGIES: tuple[tuple[str, Callable[[QoSOptions], Strategy]], ...] = (
    ("BECPUSuppress", _cpu_suppress),
    ("BEMemoryEvict", _memory_evict),
    ("BECPUEvict", _cpu_evict),
    ("CPUBurst", _cpu_burst),
    ("CgroupReconcile", _memory_qos),
    ("RdtResctrl", _resctrl),
)


def any_strategy_on(config: Config) -> bool:
    return any(config.common.feature_gates.enabled(gate) for gate, _ in STRATEGIES)


def strategies_for(config: Config) -> list[Strategy]:
    """The strategies whose feature gate is on, in koordlet's order."""
    gates = config.common.feature_gates
    return [make(config[QoSOptions]) for gate, make in STRATEGIES if gates.enabled(gate)]


def build(hubs: Hubs) -> Built:
    if not hubs.facts.has_cgroups:  # nothing to act on: neither the strategies nor the manager are imported
        log.warning("qos_manager_idle", reason=hubs.facts.cgroup_error)
        return NOTHING
    from koordlet.qosmanager.assembly import manager_for

    return Built((manager_for(hubs, strategies_for(hubs.config)),))


SPEC = AgentSpec("qosmanager", enabled=any_strategy_on, build=build,
                 options=QoSOptions)
