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


def describe(hints: dict[str, TopologyHint]) -> str:
    parts = []
    for resource, hint in sorted(hints.items()):
        nodes = "any" if hint.affinity is None else ",".join(map(str, nodes_of(hint.affinity)))
        parts.append("%s=[%s]%s" % (resource, nodes, "" if hint.preferred else " not preferred"))
    return "; ".join(parts) or "no hints"


class TopologyManager:
    def __init__(self, policy: Policy, providers: Sequence[HintProvider], scope: Scope = Scope.CONTAINER) -> None:
        self.policy = policy
        self.providers = list(providers)
        self.scope = scope

    async def merged_hints(self, request: ContainerRequest) -> tuple[dict[str, TopologyHint], bool]:
        if self.policy.name is PolicyName.NONE:
            return {}, True  # allocate without hints; no provider is asked
        provider_hints = [await provider.topology_hints(request) for provider in self.providers]
        return self.policy.merge(provider_hints)

    async def admit(self, pod: PodRequest, allocate: Allocate) -> Admission:
        """Merge and allocate every container in order; TopologyAffinityError on rejection.
        Containers allocated before a rejection stay allocated: the caller releases the pod."""
        result: dict[str, dict[str, TopologyHint]] = {}
        if self.scope is Scope.POD and pod.containers:
            whole = pod.aggregate()
            hints, admitted = await self.merged_hints(whole)
            if not admitted:
                raise TopologyAffinityError(
                    "pod %s/%s: topology policy %s cannot place the pod (%s)"
                    % (pod.pod_namespace, pod.pod_name, self.policy.name.value, describe(hints)))
            for container in pod.containers:
                await allocate(container, hints)
                result[container.container_name] = hints
            return Admission(result)
        for container in pod.containers:
            hints, admitted = await self.merged_hints(container)
            if not admitted:
                raise TopologyAffinityError(
                    "pod %s/%s container %s: topology policy %s cannot place %s (%s)"
                    % (pod.pod_namespace, pod.pod_name, container.container_name,
                       self.policy.name.value, _asked(container), describe(hints)))
            await allocate(container, hints)
            result[container.container_name] = hints
        return Admission(result)


def _asked(container: ContainerRequest) -> str:
    return ", ".join("%s=%d" % item for item in sorted(container.requests.items())) or "nothing"
