"""What one runtime source (NRI or CRI) says about a sandbox, before the store merges sources."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from koordlet.statesinformer.model import PodInfo, Resources
from koordlet.statesinformer.problems import InputProblem


def _no_specs() -> Mapping[str, Resources]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class SandboxView:
    """A converted sandbox: the pod (without containers), the per-container specs its
    extended-resource-spec annotation gives, and the invalid input met converting it."""

    pod: PodInfo
    container_specs: Mapping[str, Resources] = field(default_factory=_no_specs)
    problems: tuple[InputProblem, ...] = ()
