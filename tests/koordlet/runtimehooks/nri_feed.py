"""A stand-in for the states informer's NRI feed in these tests: NRI messages ->
PodInfo/ContainerInfo in a StaticStates (QoS from the koordinator label only)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Sequence

from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import (
    ContainerInfo, ContainerState, KatalystQoSLevel, KoordQoSClass, LinuxResources, NodeInfo, PodInfo, PodQoS,
    SandboxState, Source,
)
from nri.events import Event
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api


def pod_info(sandbox: api.PodSandbox, containers: tuple[ContainerInfo, ...] = ()) -> PodInfo:
    try:
        qos = KoordQoSClass(sandbox.labels.get("koordinator.sh/qosClass", ""))
    except ValueError:
        qos = KoordQoSClass.NONE
    level = sandbox.annotations.get("katalyst.kubewharf.io/qos_level")
    return PodInfo(uid=sandbox.uid, name=sandbox.name, namespace=sandbox.namespace, sandbox_id=sandbox.id,
                   state=SandboxState.READY, cgroup_parent=sandbox.linux.cgroup_parent,
                   qos=PodQoS(effective=qos, koord=qos, katalyst=KatalystQoSLevel(level) if level else None),
                   labels=MappingProxyType(dict(sandbox.labels)),
                   annotations=MappingProxyType(dict(sandbox.annotations)),
                   containers=containers, sources=frozenset({Source.NRI}))


def container_info(sandbox: api.PodSandbox, container: api.Container) -> ContainerInfo:
    res = container.linux.resources
    return ContainerInfo(id=container.id, name=container.name, pod_uid=sandbox.uid, state=ContainerState.CREATED,
                         cgroup_dir=container.linux.cgroups_path,
                         linux=LinuxResources(cpu_shares=res.cpu.shares.value if res.cpu.HasField("shares") else None))


class NriTestFeed:
    def __init__(self) -> None:
        self.states = StaticStates(NodeInfo("test-node"))
        self.sandboxes: dict[str, api.PodSandbox] = {}

    def nri_synchronized(self, pods: Sequence[api.PodSandbox], containers: Sequence[api.Container]) -> None:
        by_id = {p.id: p for p in pods}
        for pod in pods:
            self.sandboxes[pod.id] = pod
            mine = tuple(container_info(pod, c) for c in containers if c.pod_sandbox_id == pod.id)
            self.states.put(pod_info(pod, mine))
        del by_id

    def nri_pod_event(self, kind: Event, sandbox: api.PodSandbox) -> None:
        if kind is Event.REMOVE_POD_SANDBOX:
            self.states.remove(sandbox.uid)
        else:
            known = self.states.pod(sandbox.uid)
            self.states.put(pod_info(sandbox, known.containers if known else ()))

    def nri_container_event(self, kind: Event, sandbox: api.PodSandbox, container: api.Container) -> None:
        known = self.states.pod(sandbox.uid)
        others = tuple(c for c in (known.containers if known else ()) if c.id != container.id)
        if kind is not Event.REMOVE_CONTAINER:
            others += (container_info(sandbox, container),)
        self.states.put(pod_info(sandbox, others))
