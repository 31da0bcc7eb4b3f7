"""Feature gates: the closed set of gates, their defaults, and the kube-style
`--feature-gates=A=true,B=false` parser.

Gate names are koordlet's where koordlet has the feature, so an existing
koordlet command line keeps working; `implemented` says whether this version
of koordlet-py has the feature behind the gate yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Iterable, Mapping

from koordlet.config.parsers import parse_bool


class Stage(Enum):
    ALPHA = "alpha"
    BETA = "beta"
    GA = "GA"


@dataclass(frozen=True, slots=True)
class FeatureSpec:
    name: str
    default: bool
    stage: Stage
    description: str
    implemented: bool = False


class FeatureGateError(ValueError):
    """A --feature-gates value names an unknown gate or is not a boolean."""


_SPECS: tuple[FeatureSpec, ...] = (
    FeatureSpec("BECPUSuppress", True, Stage.BETA, "suppress best-effort CPU by cpuset or CFS quota",
                implemented=True),
    FeatureSpec("BECPUEvict", False, Stage.ALPHA, "evict best-effort pods whose CPU satisfaction is too low",
                implemented=True),
    FeatureSpec("BEMemoryEvict", False, Stage.ALPHA, "evict best-effort pods above the node memory threshold",
                implemented=True),
    FeatureSpec("CPUBurst", True, Stage.BETA, "cpu.cfs_burst_us and dynamic CFS quota scaling",
                implemented=True),
    FeatureSpec("RdtResctrl", False, Stage.ALPHA, "LLC and memory-bandwidth partitioning through resctrl",
                implemented=True),
    FeatureSpec("CgroupReconcile", True, Stage.BETA, "bypass reconcile loop that re-applies the policy and repairs drift",
                implemented=True),
    FeatureSpec("NRIRuntimeHooks", True, Stage.BETA, "register with containerd as an NRI plugin", implemented=True),
    FeatureSpec("NodeTopologyReport", False, Stage.ALPHA, "report NodeResourceTopology zones"),
    FeatureSpec("CPICollector", False, Stage.ALPHA, "collect cycles-per-instruction with perf_event_open",
                implemented=True),
    FeatureSpec("PSICollector", True, Stage.BETA, "collect pressure stall information from cgroups",
                implemented=True),
    FeatureSpec("NodeMetricReport", True, Stage.BETA, "report the NodeMetric status for load-aware scheduling",
                implemented=True),
    FeatureSpec("OvercommitReport", True, Stage.BETA, "report Katalyst realtime overcommit ratios",
                implemented=True),
    FeatureSpec("BatchResource", True, Stage.BETA,
                "runtime hook: BE pods' cpu shares, CFS quota and memory limit from batch (and Katalyst reclaimed) "
                "resources", implemented=True),
    FeatureSpec("CPUSetAllocator", True, Stage.BETA,
                "runtime hook: cpuset of LSE/LSR/dedicated pods from their binding, shared pools for LS and BE",
                implemented=True),
    FeatureSpec("GroupIdentity", True, Stage.BETA,
                "runtime hook: cpu.bvt_warp_ns per QoS class where the kernel has it, cpu.idle for BE on cgroup v2",
                implemented=True),
    FeatureSpec("OOBTopologyManager", False, Stage.ALPHA, "out-of-band NUMA topology manager and allocator "
                "(also on whenever --topology-policy-name is set)", implemented=True),
    FeatureSpec("PodResourcesServer", False, Stage.ALPHA, "serve kubelet PodResources v1 with the real allocations "
                "(served by the ORM whenever it runs)", implemented=True),
)

SPECS: Mapping[str, FeatureSpec] = MappingProxyType({spec.name: spec for spec in _SPECS})


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The resolved on/off state of every gate."""

    states: Mapping[str, bool]

    def enabled(self, name: str) -> bool:
        if name not in SPECS:
            raise FeatureGateError(f"unknown feature gate {name!r}")
        return self.states[name]

    def overridden(self) -> dict[str, bool]:
        return {name: on for name, on in self.states.items() if on != SPECS[name].default}

    def enabled_unimplemented(self) -> tuple[str, ...]:
        """Gates that are on although this version does not have their feature yet."""
        return tuple(sorted(name for name, on in self.states.items() if on and not SPECS[name].implemented))


def gate_value(name: str, text: str) -> bool:
    """One gate's true/false, the error naming the gate."""
    try:
        return parse_bool(text)
    except ValueError as exc:
        raise FeatureGateError(f"feature gate {name!r}: {exc}") from None


def parse_feature_gates(text: str) -> dict[str, bool]:
    """Parse `A=true,B=false` into {A: True, B: False}; empty items are allowed."""
    result: dict[str, bool] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise FeatureGateError(f"feature gate item {item!r} must be NAME=true|false")
        _check_known(name)
        result[name] = gate_value(name, value)
    return result


def resolve(overrides: Mapping[str, bool] | Iterable[tuple[str, bool]] = ()) -> FeatureGates:
    """Apply overrides on top of the defaults."""
    states = {name: spec.default for name, spec in SPECS.items()}
    for name, on in dict(overrides).items():
        _check_known(name)
        states[name] = on
    return FeatureGates(MappingProxyType(states))


def gates_from_text(text: str) -> FeatureGates:
    """The gates a `--feature-gates` value gives: its overrides laid over the defaults."""
    return resolve(parse_feature_gates(text))


def _check_known(name: str) -> None:
    if name not in SPECS:
        known = ", ".join(sorted(SPECS))
        raise FeatureGateError(f"unknown feature gate {name!r} (known: {known})")


def describe() -> str:
    """One line per gate for --help."""
    lines = []
    for spec in sorted(SPECS.values(), key=lambda s: s.name):
        note = "" if spec.implemented else " [not implemented yet]"
        lines.append(f"  {spec.name}={str(spec.default).lower()} ({spec.stage.value}): {spec.description}{note}")
    return "\n".join(lines)
