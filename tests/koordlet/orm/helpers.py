"""Builders shared by the ORM tests: fake NUMA machines and container requests."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from koordlet.orm.checkpoint import CheckpointStore
from koordlet.orm.cpu_layout import CpuLayout
from koordlet.orm.manager import Orm
from koordlet.topology.policy import PolicyName, new_policy
from koordlet.topology.request import ContainerRequest, ContainerType, PodRequest
from system.topology import read_cpu_topology
from tests.system.fake_trees import build_topology_tree

GiB = 1 << 30

# name -> build_topology_tree arguments (the machines the issue names)
MACHINES = {
    "1socket-1numa": dict(sockets=1, nodes_per_socket=1, cores_per_node=2, threads_per_core=1),
    "2socket-2numa": dict(sockets=2, nodes_per_socket=1, cores_per_node=4, threads_per_core=1),
    "2socket-4numa-smt": dict(sockets=2, nodes_per_socket=2, cores_per_node=2, threads_per_core=2),
    "8numa": dict(sockets=2, nodes_per_socket=4, cores_per_node=2, threads_per_core=2),
}


def layout_of(tmp: Path, machine: str, **extra) -> CpuLayout:
    host = build_topology_tree(tmp / ("sys-" + machine), node_memory_kb=4 * 1024 * 1024,
                               **{**MACHINES[machine], **extra})
    return CpuLayout.of(read_cpu_topology(host))


def new_orm(layout: CpuLayout, policy: PolicyName, reserved=frozenset(), state: Path | None = None) -> Orm:
    store = CheckpointStore(state) if state is not None else None
    return Orm(layout, frozenset(reserved), new_policy(policy, layout.numa_nodes), store)


def dedicated(uid: str, cpus: int, memory: int = 0, *, numa_binding: bool = False,
              numa_exclusive: bool = False, containers: int = 1) -> PodRequest:
    requests = {"cpu": cpus * 1000}
    if memory:
        requests["memory"] = memory
    return PodRequest(uid, "default", "pod-" + uid, tuple(
        ContainerRequest(uid, "default", "pod-" + uid, "c%d" % i, ContainerType.MAIN, i,
                         MappingProxyType(requests), exclusive_cpus=True, numa_binding=numa_binding,
                         numa_exclusive=numa_exclusive, qos_level="dedicated_cores",
                         native_qos_class="Guaranteed")
        for i in range(containers)))


def shared(uid: str, milli: int = 500) -> PodRequest:
    return PodRequest(uid, "default", "pod-" + uid, (
        ContainerRequest(uid, "default", "pod-" + uid, "c0", ContainerType.MAIN, 0,
                         MappingProxyType({"cpu": milli})),))
