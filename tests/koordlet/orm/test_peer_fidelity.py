"""Where the ORM must do what kubelet's static CPU policy and Katalyst's native policy do
(facts from their code and unit tests; the code is ours)."""

from __future__ import annotations

import asyncio
from types import MappingProxyType

import pytest

from koordlet.orm.allocation import Allocation, AllocationTable, cpuset_allocation
from koordlet.orm.builtin_cpu import BuiltinCpuProvider
from koordlet.orm.cpu_layout import CpuLayout
from koordlet.orm.cpu_take import NotEnoughCpus, take_cpus
from koordlet.orm.manager import AdmissionError
from koordlet.orm.provider import AllocationError
from koordlet.orm.requests import pod_request
from koordlet.statesinformer.from_kubelet import kubelet_pod
from koordlet.statesinformer.merge import merge_pod
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodInfo, SandboxState
from koordlet.statesinformer.qos import resolve_qos_checked
from koordlet.statesinformer.runtime_view import SandboxView
from koordlet.topology.hint import TopologyHint
from koordlet.topology.policy import PolicyName
from koordlet.topology.request import ContainerRequest, ContainerType, PodRequest
from system.topology import CpuInfo, CpuTopology, NumaNode
from tests.koordlet.orm.helpers import layout_of, new_orm


def kubelet_dual_socket_ht() -> CpuLayout:
    """kubelet's topoDualSocketHT: 12 CPUs, socket = cpu % 2, core = cpu % 6 (siblings
    n and n+6), one NUMA node per socket."""
    cpus = tuple(CpuInfo(cpu, cpu % 6, cpu % 2, cpu % 2, cpu % 2) for cpu in range(12))
    nodes = tuple(NumaNode(n, frozenset(c for c in range(12) if c % 2 == n), 1 << 34) for n in (0, 1))
    return CpuLayout.of(CpuTopology(cpus, nodes))


def request(name: str, cpus: int, kind: ContainerType = ContainerType.MAIN, index: int = 0, *,
            uid: str = "p1", numa_binding: bool = False) -> ContainerRequest:
    return ContainerRequest(uid, "default", "pod-" + uid, name, kind, index,
                            MappingProxyType({"cpu": cpus * 1000}), exclusive_cpus=True,
                            numa_binding=numa_binding, native_qos_class="Guaranteed")


# -- a hint narrower than the request ---------------------------------------------------


def test_take_cpus_spills_past_a_narrow_hint_like_kubelet() -> None:
    layout = kubelet_dual_socket_ht()
    cpus = take_cpus(layout, layout.cpus, 8, (0,), spill=True)
    assert cpus == {0, 6, 2, 8, 4, 10} | {1, 7}  # socket 0 whole, then one whole core of socket 1


def test_take_cpus_without_spill_stays_inside_the_hint() -> None:
    layout = kubelet_dual_socket_ht()
    with pytest.raises(NotEnoughCpus, match="asked 8 exclusive CPUs, 6 free"):
        take_cpus(layout, layout.cpus, 8, (0,))


def test_spill_still_refuses_more_than_the_machine_has() -> None:
    layout = kubelet_dual_socket_ht()
    with pytest.raises(NotEnoughCpus, match="asked 13 exclusive CPUs, 12 free"):
        take_cpus(layout, layout.cpus, 13, (0,), spill=True)


@pytest.mark.parametrize("numa_binding, want", [
    (False, frozenset({0, 6, 2, 8, 4, 10, 1, 7})),
    (True, None),  # a NUMA-bound container gets its hinted nodes or nothing
])
def test_best_effort_hint_narrower_than_the_request(numa_binding, want) -> None:
    layout = kubelet_dual_socket_ht()
    provider = BuiltinCpuProvider(layout, frozenset(), AllocationTable())
    ask = request("c", 8, numa_binding=numa_binding)
    coroutine = provider.allocate(ask, "cpu", TopologyHint.of([0], preferred=False))
    if want is None:
        with pytest.raises(AllocationError, match="asked 8 exclusive CPUs, 6 free"):
            asyncio.run(coroutine)
        return
    (row,) = asyncio.run(coroutine)
    assert row.cpus == want and row.numa_nodes == (0, 1) and row.hint_nodes == (0,)


# -- init containers --------------------------------------------------------------------


def test_an_init_container_states_no_numa_preference() -> None:
    provider = BuiltinCpuProvider(kubelet_dual_socket_ht(), frozenset(), AllocationTable())
    hints = asyncio.run(provider.topology_hints(request("init", 2, ContainerType.INIT), "cpu"))
    assert hints == {"cpu": None}
    app = asyncio.run(provider.topology_hints(request("app", 2), "cpu"))
    assert app is not None and app["cpu"]


@pytest.mark.parametrize("policy", [PolicyName.NONE, PolicyName.BEST_EFFORT, PolicyName.SINGLE_NUMA_NODE])
def test_app_containers_reuse_the_cpus_of_the_pods_init_containers(tmp_path, policy) -> None:
    layout = layout_of(tmp_path, "2socket-2numa")  # 8 CPUs, 4 per node
    orm = new_orm(layout, policy)
    pod = PodRequest("p1", "default", "pod-p1", (
        request("init", 4, ContainerType.INIT, 0), request("app", 4, ContainerType.MAIN, 0)))
    rows = {row.container_name: row for row in asyncio.run(orm.admit(pod))}
    assert rows["init"].init_container and not rows["app"].init_container
    assert rows["app"].cpus == rows["init"].cpus and len(rows["app"].cpus) == 4
    # so another pod finds the 4 CPUs nobody holds
    (other,) = asyncio.run(orm.admit(PodRequest("p2", "default", "pod-p2", (request("c", 4, uid="p2"),))))
    assert other.cpus == layout.cpus - rows["app"].cpus
    assert orm.table.double_booked_cpus() == frozenset()


def test_init_cpus_make_room_where_without_reuse_the_app_is_refused(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-2numa")  # 8 CPUs
    orm = new_orm(layout, PolicyName.NONE)
    pod = PodRequest("p1", "default", "pod-p1", (
        request("init", 8, ContainerType.INIT, 0), request("app", 8, ContainerType.MAIN, 0)))
    rows = {row.container_name: row for row in asyncio.run(orm.admit(pod))}
    assert rows["app"].cpus == rows["init"].cpus == layout.cpus
    assert orm.table.double_booked_cpus() == frozenset()
    # another pod's container may not take them
    with pytest.raises(AdmissionError, match="asked 1 exclusive CPUs, 0 free"):
        asyncio.run(orm.admit(PodRequest("p2", "default", "pod-p2", (request("c", 1, uid="p2"),))))


def test_two_pods_on_one_cpu_are_double_booked_an_init_and_its_app_are_not() -> None:
    def row(uid: str, name: str, cpus: str, init: bool = False) -> Allocation:
        return cpuset_allocation(Allocation(uid, "default", uid, name, "cpu", 1.0, init_container=init), [int(cpus)])

    shared_in_pod = AllocationTable([row("p1", "init", "3", init=True), row("p1", "app", "3")])
    assert shared_in_pod.double_booked_cpus() == frozenset()
    two_apps = AllocationTable([row("p1", "a", "3"), row("p1", "b", "3")])
    assert two_apps.double_booked_cpus() == {3}
    two_pods = AllocationTable([row("p1", "init", "3", init=True), row("p2", "app", "3")])
    assert two_pods.double_booked_cpus() == {3}


def test_a_checkpoint_row_without_the_init_flag_reads_as_an_app_container() -> None:
    row = cpuset_allocation(Allocation("p1", "default", "p1", "c", "cpu", 1.0), [2])
    data = row.to_json()
    del data["initContainer"]
    assert Allocation.from_json(data) == row


# -- where container types come from ----------------------------------------------------


def kubelet_item(annotations=None) -> dict:
    def container(name: str, cpu: str = "2", **extra) -> dict:
        return {"name": name, "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}, **extra}

    return {
        "metadata": {"uid": "p1", "name": "web", "namespace": "default", "annotations": annotations or {}},
        "spec": {"initContainers": [container("setup"), container("mesh", restartPolicy="Always")],
                 "containers": [container("proxy"), container("app")]},
        "status": {"qosClass": "Guaranteed"},
    }


@pytest.mark.parametrize("annotations, want", [
    ({}, {"setup": ("init", 0), "mesh": ("sidecar", 1), "proxy": ("main", 0), "app": ("sidecar", 1)}),
    # Katalyst's main-container annotation names the main one
    ({"kubernetes.io/main-container-name": "app"},
     {"setup": ("init", 0), "mesh": ("sidecar", 1), "proxy": ("sidecar", 0), "app": ("main", 1)}),
])
def test_kubelet_pods_say_each_containers_role(annotations, want) -> None:
    pod = kubelet_pod(kubelet_item(annotations))
    assert {name: (role.kind.value, role.index) for name, role in pod.container_roles.items()} == want


def runtime_view() -> tuple[SandboxView, tuple[ContainerInfo, ...]]:
    """What NRI knows of the pod: its sandbox and four running containers, no types."""
    qos, _ = resolve_qos_checked({}, {}, None, "kubepods/podp1")
    pod = PodInfo("p1", "web", "default", "sb1", SandboxState.READY, "kubepods/podp1", qos)
    containers = tuple(ContainerInfo("id-" + name, name, "p1", ContainerState.RUNNING, "kubepods/podp1/id-" + name)
                       for name in ("app", "mesh", "proxy", "setup"))
    return SandboxView(pod), containers


def test_pod_requests_put_init_containers_first_with_their_types() -> None:
    view, containers = runtime_view()
    merged, _ = merge_pod([view], containers, kubelet_pod(kubelet_item()))
    assert merged is not None
    got = [(c.container_name, c.container_type, c.container_index) for c in pod_request(merged).containers]
    assert got == [("setup", ContainerType.INIT, 0), ("mesh", ContainerType.SIDECAR, 1),
                   ("proxy", ContainerType.MAIN, 0), ("app", ContainerType.SIDECAR, 1)]


def test_without_a_pod_spec_every_container_reads_as_main() -> None:
    view, containers = runtime_view()
    merged, _ = merge_pod([view], containers)
    assert merged is not None
    assert {c.container_type for c in pod_request(merged).containers} == {ContainerType.MAIN}
