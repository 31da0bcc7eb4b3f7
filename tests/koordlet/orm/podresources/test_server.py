"""A grpcio client against the running PodResources v1 server: List, GetAllocatableResources,
Get (and NOT_FOUND), the socket's mode, kubelet's rate limit, kubelet devices merged in."""

from __future__ import annotations

import grpc
import pytest

from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.orm.options import OrmOptions
from koordlet.orm.podresources.kubelet_devices import KubeletDevicesClient
from koordlet.orm.podresources.server import PodResourcesServicer, start_pod_resources_server
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import ContainerInfo, ContainerState, NodeInfo, PodInfo, SandboxState
from koordlet.topology.policy import PolicyName
from koordlet.util.token_bucket import TokenBucket
from proto.k8s.podresources.v1 import api_pb2 as pb
from proto.k8s.podresources.v1 import api_pb2_grpc as pb_grpc
from tests.koordlet.orm.helpers import GiB, dedicated, layout_of, new_orm


def pod(uid: str, name: str, containers=("c0",)) -> PodInfo:
    return PodInfo(uid, name, "default", "sandbox-" + uid, SandboxState.READY, "kubepods/pod" + uid,
                   PodQoS(KoordQoSClass.LS),
                   containers=tuple(ContainerInfo("id-%s-%s" % (uid, c), c, uid, ContainerState.RUNNING, "")
                                    for c in containers))


@pytest.fixture
async def served(tmp_path):
    layout = layout_of(tmp_path, "2socket-2numa")
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE, reserved={0})
    await orm.admit(dedicated("a", 2, 1 * GiB, numa_binding=True))
    states = StaticStates(NodeInfo("node"), [pod("a", "pod-a"), pod("s", "shared-pod", ("x", "y"))])
    socket = tmp_path / "pod-resources" / "kubelet.sock"
    server = await start_pod_resources_server(socket, PodResourcesServicer(orm.allocations, layout.node_memory, states))
    channel = grpc.aio.insecure_channel("unix://" + str(socket))
    yield pb_grpc.PodResourcesListerStub(channel), orm, layout, socket, states
    await channel.close()
    await server.stop(None)


async def test_list_reports_exclusive_cpus_and_numa_memory(served) -> None:
    stub, orm, layout, *_ = served
    response = await stub.List(pb.ListPodResourcesRequest())
    by_name = {p.name: p for p in response.pod_resources}
    assert set(by_name) == {"pod-a", "shared-pod"}
    (container,) = by_name["pod-a"].containers
    assert set(container.cpu_ids) == orm.allocations.cpuset_for("a", "c0")
    (memory,) = container.memory
    assert (memory.memory_type, memory.size) == ("memory", GiB)
    assert [n.ID for n in memory.topology.nodes] == sorted(orm.allocations.mems_for("a", "c0"))
    shared = by_name["shared-pod"]
    assert [c.name for c in shared.containers] == ["x", "y"]
    assert all(not c.cpu_ids and not c.memory for c in shared.containers)


async def test_allocatable_is_every_cpu_but_the_reserved_and_each_nodes_memory(served) -> None:
    stub, _, layout, *_ = served
    response = await stub.GetAllocatableResources(pb.AllocatableResourcesRequest())
    assert set(response.cpu_ids) == layout.cpus - {0}
    assert [(m.size, [n.ID for n in m.topology.nodes]) for m in response.memory] == [
        (layout.node_memory[0], [0]), (layout.node_memory[1], [1])]


async def test_get_one_pod_and_not_found_for_an_unknown_one(served) -> None:
    stub, orm, *_ = served
    response = await stub.Get(pb.GetPodResourcesRequest(pod_name="pod-a", pod_namespace="default"))
    assert set(response.pod_resources.containers[0].cpu_ids) == orm.allocations.cpuset_for("a", "c0")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.Get(pb.GetPodResourcesRequest(pod_name="ghost", pod_namespace="default"))
    assert info.value.code() is grpc.StatusCode.NOT_FOUND
    assert info.value.details() == "pod ghost in namespace default not found"


async def test_the_socket_is_mode_0600(served) -> None:
    socket = served[3]
    assert socket.stat().st_mode & 0o777 == 0o600


async def test_the_method_paths_are_kubelets(served) -> None:
    socket = served[3]
    async with grpc.aio.insecure_channel("unix://" + str(socket)) as channel:
        call = channel.unary_unary("/v1.PodResourcesLister/List",
                                   request_serializer=pb.ListPodResourcesRequest.SerializeToString,
                                   response_deserializer=pb.ListPodResourcesResponse.FromString)
        assert len((await call(pb.ListPodResourcesRequest())).pod_resources) == 2


def test_token_bucket_allows_a_burst_of_ten_then_a_hundred_per_second() -> None:
    now = [0.0]
    bucket = TokenBucket(100.0, 10, clock=lambda: now[0])
    assert [bucket.allow() for _ in range(11)] == [True] * 10 + [False]
    now[0] += 0.01
    assert bucket.allow() and not bucket.allow()


async def test_devices_from_kubelets_own_socket_are_merged(tmp_path, served) -> None:
    stub, orm, layout, *_ = served

    class Kubelet(pb_grpc.PodResourcesListerServicer):
        async def List(self, request, context):
            return pb.ListPodResourcesResponse(pod_resources=[pb.PodResources(
                name="pod-a", namespace="default", containers=[pb.ContainerResources(
                    name="c0", devices=[pb.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=["gpu0"])])])])

    kubelet_socket = tmp_path / "kubelet.sock"
    kubelet = grpc.aio.server()
    pb_grpc.add_PodResourcesListerServicer_to_server(Kubelet(), kubelet)
    kubelet.add_insecure_port("unix://" + str(kubelet_socket))
    await kubelet.start()
    client = KubeletDevicesClient((str(kubelet_socket),))
    ours = tmp_path / "ours.sock"
    server = await start_pod_resources_server(ours, PodResourcesServicer(orm.allocations, layout.node_memory,
                                                                         kubelet=client))
    try:
        async with grpc.aio.insecure_channel("unix://" + str(ours)) as channel:
            response = await pb_grpc.PodResourcesListerStub(channel).List(pb.ListPodResourcesRequest())
    finally:
        await server.stop(None)
        await kubelet.stop(None)
        await client.close()
    (pod_a,) = response.pod_resources
    (container,) = pod_a.containers
    assert [d.resource_name for d in container.devices] == ["nvidia.com/gpu"]
    assert set(container.cpu_ids) == orm.allocations.cpuset_for("a", "c0")


async def test_list_follows_changes_to_allocations_and_pods(served) -> None:
    stub, orm, _, _, states = served
    await stub.List(pb.ListPodResourcesRequest())
    await orm.remove_pod("a")
    states.put(pod("s", "shared-pod", ("x", "y", "z")))
    response = await stub.List(pb.ListPodResourcesRequest())
    by_name = {p.name: p for p in response.pod_resources}
    assert not by_name["pod-a"].containers[0].cpu_ids
    assert [c.name for c in by_name["shared-pod"].containers] == ["x", "y", "z"]
    states.remove("s")
    response = await stub.List(pb.ListPodResourcesRequest())
    assert [p.name for p in response.pod_resources] == ["pod-a"]


async def test_a_configured_group_gets_mode_0660(tmp_path) -> None:
    import os

    from koordlet.daemon.cli import parse_args

    gid = os.getgid()
    assert parse_args(["--pod-resources-socket-group", str(gid)])[OrmOptions].pod_resources_socket_group == gid
    layout = layout_of(tmp_path, "1socket-1numa")
    orm = new_orm(layout, PolicyName.NONE)
    socket = tmp_path / "shared.sock"
    server = await start_pod_resources_server(socket, PodResourcesServicer(orm.allocations, layout.node_memory), gid)
    try:
        info = socket.stat()
        assert (info.st_mode & 0o777, info.st_gid) == (0o660, gid)
    finally:
        await server.stop(None)


def test_an_unknown_group_name_is_a_configuration_error() -> None:
    from koordlet.config import ConfigError
    from koordlet.daemon.cli import parse_args

    with pytest.raises(ConfigError, match="no group named 'no-such-group-x'"):
        parse_args(["--pod-resources-socket-group", "no-such-group-x"])
