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
    # Koordinator's default for a gate koordlet has; None for gates of our own
    koordlet_default: bool | None = None


class FeatureGateError(ValueError):
    """A --feature-gates value names an unknown gate or is not a boolean."""


_A, _B = Stage.ALPHA, Stage.BETA

_SPECS: tuple[FeatureSpec, ...] = (
    FeatureSpec("BECPUSuppress", True, _B, "suppress best-effort CPU by cpuset or CFS quota",
                implemented=True, koordlet_default=True),
    FeatureSpec("BECPUEvict", False, _A, "evict best-effort pods whose CPU satisfaction is too low",
                implemented=True, koordlet_default=False),
    FeatureSpec("BEMemoryEvict", False, _A, "evict best-effort pods above the node memory threshold",
                implemented=True, koordlet_default=False),
    FeatureSpec("CPUBurst", True, _B, "cpu.cfs_burst_us and dynamic CFS quota scaling",
                implemented=True, koordlet_default=True),
    FeatureSpec("RdtResctrl", True, _B, "LLC and memory-bandwidth partitioning through resctrl (acts only when "
                "a class's resctrlQOS is enabled)", implemented=True, koordlet_default=True),
    # koordlet's CgroupReconcile is memory QoS alone; ours also gates the bypass reconcile
    # loop, which the product needs on (runtimes without NRI, drift)
    FeatureSpec("CgroupReconcile", True, _B, "bypass reconcile loop that re-applies the policy and repairs drift; "
                "memory QoS", implemented=True, koordlet_default=False),
    FeatureSpec("NRIRuntimeHooks", True, _B, "register with containerd as an NRI plugin", implemented=True),
    FeatureSpec("NodeTopologyReport", True, _A, "report NodeResourceTopology zones", implemented=True,
                koordlet_default=True),
    FeatureSpec("CPICollector", False, _A, "collect cycles-per-instruction with perf_event_open",
                implemented=True, koordlet_default=False),
    # on here: PSI is a cheap file read and the reports and dashboards use it
    FeatureSpec("PSICollector", True, _B, "collect pressure stall information from cgroups",
                implemented=True, koordlet_default=False),
    FeatureSpec("NodeMetricReport", True, _B, "report the NodeMetric status for load-aware scheduling",
                implemented=True),
    FeatureSpec("OvercommitReport", True, _B, "report Katalyst realtime overcommit ratios",
                implemented=True),
    FeatureSpec("BatchResource", True, _B,
                "runtime hook: BE pods' cpu shares, CFS quota and memory limit from batch (and Katalyst reclaimed) "
                "resources", implemented=True, koordlet_default=True),
    FeatureSpec("CPUSetAllocator", True, _B,
                "runtime hook: cpuset of LSE/LSR/dedicated pods from their binding, shared pools for LS and BE",
                implemented=True, koordlet_default=True),
    FeatureSpec("GroupIdentity", True, _B,
                "runtime hook: cpu.bvt_warp_ns per QoS class where the kernel has it, cpu.idle for BE on cgroup v2",
                implemented=True, koordlet_default=True),
    FeatureSpec("OOBTopologyManager", False, _A, "out-of-band NUMA topology manager and allocator "
                "(also on whenever --topology-policy-name is set)", implemented=True),
    FeatureSpec("PodResourcesServer", False, _A, "serve kubelet PodResources v1 with the real allocations "
                "(served by the ORM whenever it runs)", implemented=True),
    # koordlet's gates for features koordlet-py does not have: known, so a koordlet command
    # line keeps working; turning one on is said once at start and changes nothing
    *(FeatureSpec(name, False, _A, description, koordlet_default=False) for name, description in (
        ("AuditEvents", "koordlet's audit event log"),
        ("AuditEventsHTTPHandler", "koordlet's audit events over HTTP"),
        ("BECPUManager", "koordlet's BE CPU manager"),
        ("CPUEvict", "koordlet's general CPU eviction"),
        ("MemoryEvict", "koordlet's general memory eviction"),
        ("CPUAllocatableEvict", "eviction by CPU allocatable"),
        ("MemoryAllocatableEvict", "eviction by memory allocatable"),
        ("SystemConfig", "node sysctls from the NodeSLO systemStrategy"),
        ("Accelerators", "GPU and other accelerator devices"),
        ("RDMADevices", "RDMA devices"),
        ("Libpfm4", "CPI through libpfm4"),
        ("ResctrlCollector", "LLC occupancy and memory bandwidth from resctrl"),
        ("BlkIOReconcile", "block IO QoS"),
        ("ColdPageCollector", "cold page collection"),
        ("HugePageReport", "huge pages in the node topology report"),
        ("PodResourcesProxy", "koordlet's PodResources proxy"),
        ("HamiCoreVGPUMonitor", "HAMi vGPU monitoring"),
        ("PerCPUMetric", "per-CPU usage metrics"),
        ("NodeMetricPromMetrics", "NodeMetric figures as Prometheus metrics"),
        ("GPUEnvInject", "runtime hook: GPU environment variables"),
        ("RDMADeviceInject", "runtime hook: RDMA devices"),
        ("CPUNormalization", "runtime hook: CPU normalization"),
        ("CoreSched", "runtime hook: core scheduling cookies"),
        ("TerwayQoS", "runtime hook: Terway network QoS"),
        ("TCNetworkQoS", "runtime hook: tc network QoS"),
        ("Resctrl", "runtime hook: resctrl group of a new container"),
        ("OOMScoreAdj", "runtime hook: oom_score_adj"),
    )),
)

# kube's meta gates: turn on every alpha / beta gate not set explicitly
ALL_STAGES = {"AllAlpha": Stage.ALPHA, "AllBeta": Stage.BETA}

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
    """Apply overrides on top of the defaults; AllAlpha / AllBeta set every gate of their
    stage that is not named itself."""
    states = {name: spec.default for name, spec in SPECS.items()}
    given = dict(overrides)
    for meta, stage in ALL_STAGES.items():
        if meta in given:
            on = given.pop(meta)
            for name, spec in SPECS.items():
                if spec.stage is stage and name not in given:
                    states[name] = on
    for name, on in given.items():
        _check_known(name)
        states[name] = on
    return FeatureGates(MappingProxyType(states))


def gates_from_text(text: str) -> FeatureGates:
    """The gates a `--feature-gates` value gives: its overrides laid over the defaults."""
    return resolve(parse_feature_gates(text))


def _check_known(name: str) -> None:
    if name not in SPECS and name not in ALL_STAGES:
        known = ", ".join(sorted(SPECS))
        raise FeatureGateError(f"unknown feature gate {name!r} (known: {known})")


def describe() -> str:
    """One line per gate for --help."""
    lines = []
    for spec in sorted(SPECS.values(), key=lambda s: s.name):
        note = "" if spec.implemented else " [not implemented]"
        lines.append(f"  {spec.name}={str(spec.default).lower()} ({spec.stage.value}): {spec.description}{note}")
    lines.append("  AllAlpha, AllBeta: every alpha / beta gate not named itself")
    return "\n".join(lines)


def _yes(value: bool | None) -> str:
    return "—" if value is None else str(value).lower()


def gate_rows() -> list[str]:
    """README's gate table: ours and koordlet's default, stage, implemented, meaning."""
    rows = []
    for spec in SPECS.values():
        rows.append(f"| `{spec.name}` | {_yes(spec.default)} | {_yes(spec.koordlet_default)} | {spec.stage.value} | "
                    f"{'yes' if spec.implemented else 'no'} | {spec.description} |")
    return rows
