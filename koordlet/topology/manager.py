"""The topology manager: ask every hint provider, merge with the policy, admit or reject,
and let the caller allocate with the merged hints, container by container (scope
container) or once for the whole pod (scope pod), as kubelet does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from koordlet.topology.hint import ProviderHints, TopologyHint, nodes_of
from koordlet.topology.policy import Policy, PolicyName
from koordlet.topology.request import ContainerRequest, PodRequest


class Scope(Enum):
    CONTAINER = "container"
    POD = "pod"


class HintProvider(Protocol):
    async def topology_hints(self, request: ContainerRequest) -> ProviderHints:
        """NUMA hints per resource this provider manages; None when it has no opinion."""
        ...


class TopologyAffinityError(Exception):
    """The policy cannot place the pod; the message says which container and why."""


# Allocates one container with the merged hints (resource -> hint); raises to reject.
Allocate = Callable[[ContainerRequest, dict[str, TopologyHint]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Admission:
    container_hints: dict[str, dict[str, TopologyHint]]  # container name -> resource -> hint


def _nodes(hint: TopologyHint) -> str:
    return "any" if hint.affinity is None else "[%s]" % ",".join(map(str, nodes_of(hint.affinity)))


def explain(provider_hints: Sequence[ProviderHints], merged: dict[str, TopologyHint]) -> str:
    """Why a pod was not admitted, for the runtime's error and the logs: where each resource
    has room (the narrowest few sets), then the merged result."""
    parts = []
    for hints in provider_hints:
        for resource, options in sorted((hints or {}).items()):
            if options is None:
                continue
            if not options:
                parts.append("%s: no NUMA placement has room" % resource)
                continue
            narrowest = sorted(options, key=lambda h: (h.count, h.affinity or 0))[:3]
            parts.append("%s: room on %s%s" % (resource, " or ".join(_nodes(h) for h in narrowest),
                                               " ..." if len(options) > 3 else ""))
    merged_text = "; ".join("%s=%s%s" % (r, _nodes(h), "" if h.preferred else " not preferred")
                            for r, h in sorted(merged.items()))
    parts.append("merged " + (merged_text or "nothing"))
    return "; ".join(parts)


class TopologyManager:
    def __init__(self, policy: Policy, providers: Sequence[HintProvider], scope: Scope = Scope.CONTAINER) -> None:
        self.policy = policy
        self.providers = list(providers)
        self.scope = scope

    async def merged_hints(self, request: ContainerRequest) -> tuple[dict[str, TopologyHint], bool, str]:
        """(hint per resource, admitted, why not in words)."""
        if self.policy.name is PolicyName.NONE:
            return {}, True, ""  # allocate without hints; no provider is asked
        provider_hints = [await provider.topology_hints(request) for provider in self.providers]
        hints, admitted = self.policy.merge(provider_hints)
        return hints, admitted, "" if admitted else explain(provider_hints, hints)

    async def admit(self, pod: PodRequest, allocate: Allocate) -> Admission:
        """Merge and allocate every container in order; TopologyAffinityError on rejection.
        Containers allocated before a rejection stay allocated: the caller releases the pod."""
        result: dict[str, dict[str, TopologyHint]] = {}
        if self.scope is Scope.POD and pod.containers:
            whole = pod.aggregate()
            hints, admitted, why = await self.merged_hints(whole)
            if not admitted:
                raise TopologyAffinityError(
                    "pod %s/%s: topology policy %s cannot place the pod (%s)"
                    % (pod.pod_namespace, pod.pod_name, self.policy.name.value, why))
            for container in pod.containers:
                await allocate(container, hints)
                result[container.container_name] = hints
            return Admission(result)
        for container in pod.containers:
            hints, admitted, why = await self.merged_hints(container)
            if not admitted:
                raise TopologyAffinityError(
                    "pod %s/%s container %s: topology policy %s cannot place %s (%s)"
                    % (pod.pod_namespace, pod.pod_name, container.container_name,
                       self.policy.name.value, _asked(container), why))
            await allocate(container, hints)
            result[container.container_name] = hints
        return Admission(result)


def _asked(container: ContainerRequest) -> str:
    return ", ".join("%s=%d" % item for item in sorted(container.requests.items())) or "nothing"
