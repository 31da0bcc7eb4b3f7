"""PodResources v1 messages built from the ORM's allocations and the informer's pods (pure).

As kubelet reports them: cpu_ids only for exclusively assigned CPUs, memory only for
NUMA-bound containers (type "memory", size, the nodes), and a QRM plugin's other
allocations as devices of its resource. Devices kubelet itself assigned can be merged in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from koordlet.orm.allocation import OCI_CPUSET_CPUS, OCI_CPUSET_MEMS, Allocation
from koordlet.statesinformer.model import PodInfo, SandboxState
from proto.k8s.podresources.v1 import api_pb2 as pb

MEMORY_TYPE = "memory"
# (namespace, pod name, container name) -> devices kubelet's own PodResources reported
KubeletDevices = Mapping[tuple[str, str, str], Sequence[pb.ContainerDevices]]


def _topology(nodes: Iterable[int]) -> pb.TopologyInfo:
    return pb.TopologyInfo(nodes=[pb.NUMANode(ID=n) for n in sorted(nodes)])


def container_resources(name: str, allocations: Sequence[Allocation],
                        kubelet_devices: Sequence[pb.ContainerDevices] = ()) -> pb.ContainerResources:
    cpus: set[int] = set()
    memory: list[pb.ContainerMemory] = []
    devices: list[pb.ContainerDevices] = list(kubelet_devices)
    for allocation in allocations:
        if allocation.oci_property == OCI_CPUSET_CPUS:
            cpus |= allocation.cpus
        elif allocation.oci_property == OCI_CPUSET_MEMS:
            memory.append(pb.ContainerMemory(memory_type=MEMORY_TYPE, size=int(allocation.quantity),
                                             topology=_topology(allocation.mems)))
        else:
            devices.append(pb.ContainerDevices(
                resource_name=allocation.resource,
                device_ids=[allocation.result] if allocation.result else [],
                topology=_topology(allocation.numa_nodes)))
    return pb.ContainerResources(name=name, cpu_ids=sorted(cpus), memory=memory, devices=devices)


def pod_resources(namespace: str, name: str, container_names: Sequence[str],
                  allocations: Sequence[Allocation], kubelet_devices: KubeletDevices) -> pb.PodResources:
    by_container: dict[str, list[Allocation]] = {}
    for allocation in allocations:
        by_container.setdefault(allocation.container_name, []).append(allocation)
    names = list(container_names) + sorted(set(by_container) - set(container_names))
    return pb.PodResources(name=name, namespace=namespace, containers=[
        container_resources(c, by_container.get(c, ()), kubelet_devices.get((namespace, name, c), ()))
        for c in names])


def list_pods(pods: Iterable[PodInfo], allocations: Iterable[Allocation],
              kubelet_devices: KubeletDevices) -> list[pb.PodResources]:
    """Every active pod the informer knows, plus any pod only the allocations know."""
    by_pod: dict[str, list[Allocation]] = {}
    for allocation in allocations:
        by_pod.setdefault(allocation.pod_uid, []).append(allocation)
    result = []
    seen: set[str] = set()
    for pod in pods:
        if pod.state is not SandboxState.READY and pod.uid not in by_pod:
            continue
        seen.add(pod.uid)
        result.append(pod_resources(pod.namespace, pod.name, [c.name for c in pod.containers],
                                    by_pod.get(pod.uid, ()), kubelet_devices))
    for uid, rows in sorted(by_pod.items()):
        if uid not in seen:
            result.append(pod_resources(rows[0].pod_namespace, rows[0].pod_name, (), rows, kubelet_devices))
    return result


def allocatable(cpus: Iterable[int], node_memory: Mapping[int, int],
                devices: Sequence[pb.ContainerDevices] = ()) -> pb.AllocatableResourcesResponse:
    return pb.AllocatableResourcesResponse(
        cpu_ids=sorted(cpus), devices=list(devices),
        memory=[pb.ContainerMemory(memory_type=MEMORY_TYPE, size=size, topology=_topology([node]))
                for node, size in sorted(node_memory.items())])
