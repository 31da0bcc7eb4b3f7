"""What a pod asks of the ORM, from what the states informer knows (pure).

With a pod spec (kubelet / API server) the requests come from it. In NRI and standalone
mode there is none: CPU request and limit come back from the container's CRI resources
by inverting kubelet's conversions (shares = milli * 1024 / 1000, quota = milli *
period / 1000), memory from its limit. Exclusive CPUs go to a Guaranteed pod of class
Katalyst dedicated_cores or Koordinator LSE/LSR (any class with --cpu-manager-policy=static)
whose containers ask whole CPUs.

Container types come from the pod spec (kubelet /pods): init containers are INIT and come
first, the main container MAIN, the others SIDECAR. Without a spec (NRI or CRI alone)
every container reads as MAIN: the runtime does not say which ones are init containers.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from koordlet.apis.qos import KatalystQoSLevel, cpu_binding, kube_tier_name
from koordlet.statesinformer.model import ContainerInfo, ContainerKind, PodInfo
from koordlet.topology.request import ContainerRequest, ContainerType, PodRequest
from system.cgroup_layout import QoSTier

CPU = "cpu"
MEMORY = "memory"
MIN_SHARES = 2  # kubelet's floor: a BestEffort container's shares, i.e. no request
# cgroup v1 "no limit" as the kernel reports it, and anything near it
UNLIMITED_MEMORY = 1 << 62


def milli_from_shares(shares: int | None) -> int:
    if shares is None or shares <= MIN_SHARES:
        return 0
    return round(shares * 1000 / 1024)


def milli_from_quota(quota: int | None, period: int | None) -> int | None:
    if quota is None or period is None or quota <= 0 or period <= 0:
        return None
    return round(quota * 1000 / period)


def is_guaranteed(pod: PodInfo) -> bool:
    """The tier the states informer resolved (from the pod spec, else from the cgroup parent)."""
    return pod.qos.k8s is QoSTier.GUARANTEED


def container_quantities(container: ContainerInfo, names_map: Mapping[str, str]) -> tuple[dict[str, int], int | None]:
    """(requests by resource, CPU limit in milli or None) for one container."""
    requests: dict[str, int] = {}
    cpu_limit: int | None = None
    spec = container.spec
    if spec is not None and (spec.requests or spec.limits):
        for name, value in list(spec.requests.items()) + [
                (n, v) for n, v in spec.limits.items() if n not in spec.requests]:
            target = names_map.get(name, name)
            requests[target] = requests.get(target, 0) + value
        cpu_limit = spec.limits.get(CPU)
    else:
        linux = container.linux
        if milli := milli_from_shares(linux.cpu_shares):
            requests[CPU] = milli
        cpu_limit = milli_from_quota(linux.cpu_quota, linux.cpu_period)
        if linux.memory_limit is not None and 0 < linux.memory_limit < UNLIMITED_MEMORY:
            requests[MEMORY] = linux.memory_limit
    return requests, cpu_limit


_TYPES = {ContainerKind.INIT: ContainerType.INIT, ContainerKind.MAIN: ContainerType.MAIN,
          ContainerKind.SIDECAR: ContainerType.SIDECAR}


def _spec_order(container: ContainerInfo) -> tuple[bool, int, str]:
    """spec.initContainers first (they start first), each list in the pod spec's order."""
    return (not container.role.in_init_list, container.role.index, container.name)


def wants_exclusive_class(pod: PodInfo) -> bool:
    """The class binds the pod to CPUs of its own (koordlet.apis.qos.cpu_binding)."""
    return cpu_binding(pod.qos) is not None


def pod_request(pod: PodInfo, names_map: Mapping[str, str] = MappingProxyType({}),
                static_cpu_policy: bool = False) -> PodRequest:
    """With `static_cpu_policy` (kubelet's static CPU manager) every Guaranteed pod's whole-CPU
    containers are exclusive, whatever its class."""
    exclusive_class = (static_cpu_policy or wants_exclusive_class(pod)) and is_guaranteed(pod)
    dedicated = pod.qos.katalyst is KatalystQoSLevel.DEDICATED_CORES
    containers = []
    for container in sorted(pod.containers, key=_spec_order):
        requests, cpu_limit = container_quantities(container, names_map)
        cpu = requests.get(CPU, 0)
        whole = cpu > 0 and cpu % 1000 == 0 and (cpu_limit is None or cpu_limit == cpu)
        containers.append(ContainerRequest(
            pod.uid, pod.namespace, pod.name, container.name, _TYPES[container.role.kind], container.role.index,
            MappingProxyType(requests),
            exclusive_cpus=exclusive_class and whole,
            numa_binding=dedicated and pod.qos.numa_binding,
            numa_exclusive=dedicated and pod.qos.numa_binding and pod.qos.numa_exclusive,
            qos_level=pod.qos.katalyst.value if pod.qos.katalyst else "",
            native_qos_class=kube_tier_name(pod.qos.k8s) if pod.qos.k8s else "",
            labels=pod.labels, annotations=pod.annotations,
        ))
    return PodRequest(pod.uid, pod.namespace, pod.name, tuple(containers))
