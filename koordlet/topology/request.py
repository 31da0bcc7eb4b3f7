"""What is asked of the topology manager and the resource providers: one container's
(or one pod's) resource requests plus the facts providers decide on."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Mapping


class ContainerType(Enum):
    """resourceplugin.v1alpha1 ContainerType; the values are the wire numbers."""

    INIT = 0
    MAIN = 1
    SIDECAR = 2
    EPHEMERAL = 3


def _empty() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ContainerRequest:
    pod_uid: str
    pod_namespace: str
    pod_name: str
    container_name: str
    container_type: ContainerType
    container_index: int
    # resource name -> quantity: "cpu" in milli-cores, "memory" in bytes, others in base units
    requests: Mapping[str, int]
    exclusive_cpus: bool = False  # whole CPUs for this container alone
    numa_binding: bool = False    # cpuset.mems (and memory accounting) follow the chosen nodes
    numa_exclusive: bool = False  # the chosen NUMA nodes belong to this pod alone
    qos_level: str = ""           # Katalyst qos level when the pod has one
    native_qos_class: str = ""    # Guaranteed / Burstable / BestEffort
    labels: Mapping[str, str] = field(default_factory=_empty)
    annotations: Mapping[str, str] = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class PodRequest:
    pod_uid: str
    pod_namespace: str
    pod_name: str
    containers: tuple[ContainerRequest, ...]  # init containers first, in order

    def aggregate(self) -> ContainerRequest:
        """The pod as one request (pod scope): kubelet's effective request, the larger of
        the largest init container and the sum of the others, per resource."""
        names = {name for c in self.containers for name in c.requests}
        totals: dict[str, int] = {}
        for name in names:
            init = max((c.requests.get(name, 0) for c in self.containers
                        if c.container_type is ContainerType.INIT), default=0)
            app = sum(c.requests.get(name, 0) for c in self.containers
                      if c.container_type is not ContainerType.INIT)
            totals[name] = max(init, app)
        first = self.containers[0]
        return ContainerRequest(
            self.pod_uid, self.pod_namespace, self.pod_name, "", ContainerType.MAIN, 0,
            MappingProxyType(totals),
            exclusive_cpus=any(c.exclusive_cpus for c in self.containers),
            numa_binding=any(c.numa_binding for c in self.containers),
            numa_exclusive=any(c.numa_exclusive for c in self.containers),
            qos_level=first.qos_level, native_qos_class=first.native_qos_class,
            labels=first.labels, annotations=first.annotations,
        )
