"""PodResources v1 messages built from the ORM's allocations and the informer's pods (pure).

As kubelet reports them: cpu_ids only for exclusively assigned CPUs, memory only for
NUMA-bound containers (type "memory", size, the nodes), and a QRM plugin's other
allocations as devices of its resource. Devices kubelet itself assigned can be merged in.
Messages are filled in place (add/extend): handing lists of sub-messages to constructors
copies every one of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from koordlet.orm.allocation import OCI_CPUSET_CPUS, OCI_CPUSET_MEMS, Allocation
from koordlet.statesinformer.model import PodInfo, SandboxState
from proto.k8s.podresources.v1 import api_pb2 as pb

MEMORY_TYPE = "memory"
# (namespace, pod name, container name) -> devices kubelet's own PodResources reported
KubeletDevices = Mapping[tuple[str, str, str], Sequence[pb.ContainerDevices]]


def _set_topology(topology: pb.TopologyInfo, nodes: Iterable[int]) -> None:
    for node in sorted(nodes):
        topology.nodes.add(ID=node)


def fill_container(target: pb.ContainerResources, allocations: Sequence[Allocation],
                   kubelet_devices: Sequence[pb.ContainerDevices] = ()) -> None:
    cpus: set[int] = set()
    target.devices.extend(kubelet_devices)
    for allocation in allocations:
        if allocation.oci_property == OCI_CPUSET_CPUS:
            cpus |= allocation.cpus
        elif allocation.oci_property == OCI_CPUSET_MEMS:
            memory = target.memory.add(memory_type=MEMORY_TYPE, size=int(allocation.quantity))
            _set_topology(memory.topology, allocation.mems)
        else:
            device = target.devices.add(resource_name=allocation.resource)
            if allocation.result:
                device.device_ids.append(allocation.result)
            _set_topology(device.topology, allocation.numa_nodes)
    target.cpu_ids.extend(sorted(cpus))


def fill_pod(target: pb.PodResources, namespace: str, name: str, container_names: Sequence[str],
             allocations: Sequence[Allocation], kubelet_devices: KubeletDevices) -> None:
    target.name = name
    target.namespace = namespace
    by_container: dict[str, list[Allocation]] = {}
    for allocation in allocations:
        by_container.setdefault(allocation.container_name, []).append(allocation)
    for container in list(container_names) + sorted(set(by_container) - set(container_names)):
        fill_container(target.containers.add(name=container), by_container.get(container, ()),
                       kubelet_devices.get((namespace, name, container), ()) if kubelet_devices else ())


class PodResourcesCache:
    """Built PodResources messages per pod, reused while the pod value (the informer replaces
    it on every change), its allocation rows and its kubelet devices stay the same: List then
    copies messages in C instead of building hundreds in Python."""

    def __init__(self) -> None:
        self._built: dict[str, tuple[object, tuple[Allocation, ...], tuple, pb.PodResources]] = {}

    def pod(self, uid: str, source: object, namespace: str, name: str, container_names: Sequence[str],
            rows: tuple[Allocation, ...], kubelet_devices: KubeletDevices) -> pb.PodResources:
        devices = tuple((c, tuple(kubelet_devices.get((namespace, name, c), ()))) for c in container_names) \
            if kubelet_devices else ()
        cached = self._built.get(uid)
        if cached is not None and cached[0] is source and cached[1] == rows and cached[2] == devices:
            return cached[3]
        message = pb.PodResources()
        fill_pod(message, namespace, name, container_names, rows, kubelet_devices)
        self._built[uid] = (source, rows, devices, message)
        return message

    def forget_except(self, uids: set[str]) -> None:
        for uid in set(self._built) - uids:
            del self._built[uid]


def list_pods(pods: Iterable[PodInfo], allocations: Iterable[Allocation],
              kubelet_devices: KubeletDevices, cache: PodResourcesCache | None = None) -> pb.ListPodResourcesResponse:
    """Every active pod the informer knows, plus any pod only the allocations know."""
    cache = cache if cache is not None else PodResourcesCache()
    by_pod: dict[str, list[Allocation]] = {}
    for allocation in allocations:
        by_pod.setdefault(allocation.pod_uid, []).append(allocation)
    built: list[pb.PodResources] = []
    seen: set[str] = set()
    for pod in pods:
        if pod.state is not SandboxState.READY and pod.uid not in by_pod:
            continue
        seen.add(pod.uid)
        built.append(cache.pod(pod.uid, pod, pod.namespace, pod.name, [c.name for c in pod.containers],
                               tuple(by_pod.get(pod.uid, ())), kubelet_devices))
    for uid, rows in sorted(by_pod.items()):
        if uid not in seen:
            seen.add(uid)
            built.append(cache.pod(uid, None, rows[0].pod_namespace, rows[0].pod_name, (), tuple(rows),
                                   kubelet_devices))
    cache.forget_except(seen)
    response = pb.ListPodResourcesResponse()
    response.pod_resources.extend(built)
    return response


def allocatable(cpus: Iterable[int], node_memory: Mapping[int, int],
                devices: Sequence[pb.ContainerDevices] = ()) -> pb.AllocatableResourcesResponse:
    response = pb.AllocatableResourcesResponse(cpu_ids=sorted(cpus))
    response.devices.extend(devices)
    for node, size in sorted(node_memory.items()):
        _set_topology(response.memory.add(memory_type=MEMORY_TYPE, size=size).topology, [node])
    return response
