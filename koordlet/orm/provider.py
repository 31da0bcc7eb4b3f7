"""What serves a resource for the ORM: the built-in CPU and memory providers in-process,
or a QRM plugin over resourceplugin.v1alpha1. Both look the same to the ORM."""

from __future__ import annotations

from typing import Protocol

from koordlet.orm.allocation import Allocation
from koordlet.topology.hint import ProviderHints, TopologyHint
from koordlet.topology.request import ContainerRequest


class AllocationError(Exception):
    """A provider could not allocate what the admitted container asked for."""


class ResourceProvider(Protocol):
    name: str  # BUILTIN or the plugin's registered resource name

    def serves(self, resource: str) -> bool: ...

    async def topology_hints(self, request: ContainerRequest, resource: str) -> ProviderHints: ...

    async def allocate(self, request: ContainerRequest, resource: str,
                       hint: TopologyHint | None) -> tuple[Allocation, ...]: ...

    async def remove_pod(self, pod_uid: str) -> None: ...
