"""What one runtime source (NRI or CRI) says about a sandbox, before the store merges sources."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from koordlet.statesinformer.extended_spec import parse_extended_resource_spec
from koordlet.statesinformer.model import PodInfo, Resources, SandboxState, Source
from koordlet.statesinformer.problems import InputProblem
from koordlet.statesinformer.qos import resolve_qos_checked
from system.errors import InvalidValue
from system.runtime_cgroup_path import cgroup_dir


def _no_specs() -> Mapping[str, Resources]:
    return MappingProxyType({})


_ONLY = {source: frozenset({source}) for source in Source}  # one per node, not one per pod


@dataclass(frozen=True, slots=True)
class SandboxView:
    """A converted sandbox: the pod (without containers), the per-container specs its
    extended-resource-spec annotation gives, and the invalid input met converting it."""

    pod: PodInfo
    container_specs: Mapping[str, Resources] = field(default_factory=_no_specs)
    problems: tuple[InputProblem, ...] = ()


@dataclass(frozen=True, slots=True)
class SandboxFacts:
    """The facts a runtime message gives about a sandbox, whichever protocol it came in."""

    uid: str
    name: str
    namespace: str
    sandbox_id: str
    state: SandboxState
    cgroup_parent: str  # already a directory
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    source: Source
    created_at_ns: int = 0


def build_view(facts: SandboxFacts, problems: tuple[InputProblem, ...] = ()) -> SandboxView:
    """The pod from a sandbox's facts: QoS resolved and the extended-resource-spec read."""
    qos, qos_problems = resolve_qos_checked(facts.labels, facts.annotations, None, facts.cgroup_parent)
    specs, spec_problems = parse_extended_resource_spec(facts.annotations)
    pod = PodInfo(
        uid=facts.uid,
        name=facts.name,
        namespace=facts.namespace,
        sandbox_id=facts.sandbox_id,
        state=facts.state,
        cgroup_parent=facts.cgroup_parent,
        qos=qos,
        labels=facts.labels,
        annotations=facts.annotations,
        sources=_ONLY[facts.source],
        created_at_ns=facts.created_at_ns,
    )
    return SandboxView(pod, specs, (*problems, *qos_problems, *spec_problems))


def checked_cgroup_dir(value: Any, key: str, problems: list[InputProblem]) -> str:
    """cgroup_dir(value), or "" with a problem noted when no driver writes it so."""
    if not isinstance(value, str):
        return ""
    if value[:1] == "/" and value[-1:] != "/" and "//" not in value and "/." not in value and ":" not in value:
        return value[1:]  # cgroupfs's plain form, what nearly every event carries: cgroup_dir would keep it as is
    try:
        return cgroup_dir(value)
    except InvalidValue as exc:
        problems.append(InputProblem(key, value, str(exc)))
        return ""
