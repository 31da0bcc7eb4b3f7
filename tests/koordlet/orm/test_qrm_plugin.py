"""A QRM plugin registers over the socket dir, receives hint and Allocate calls for its
resource, and its answers land in the checkpoint and in PodResources List."""

from __future__ import annotations

import grpc
import pytest

from koordlet.orm.checkpoint import CheckpointStore
from koordlet.orm.manager import AdmissionError
from koordlet.orm.podresources.server import PodResourcesServicer, start_pod_resources_server
from koordlet.orm.registration import REGISTRATION_SOCKET, start_registration_server
from koordlet.topology.policy import PolicyName
from proto.k8s.podresources.v1 import api_pb2 as pr
from proto.k8s.podresources.v1 import api_pb2_grpc as pr_grpc
from proto.k8s.resourceplugin.v1alpha1 import api_pb2 as pb
from tests.koordlet.orm.fake_qrm_plugin import FakeQrmPlugin
from tests.koordlet.orm.helpers import dedicated, layout_of, new_orm


@pytest.fixture
async def rig(tmp_path):
    socks = tmp_path / "socks"
    socks.mkdir()
    layout = layout_of(tmp_path, "2socket-2numa")
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE, state=tmp_path / "state")
    registration = await start_registration_server(socks, orm.register_plugin)
    plugin = FakeQrmPlugin("cpu", hint_nodes=[[1], [0, 1]], cpus_to_give=[5, 6, 7])
    await plugin.serve(socks / "qrm_cpu_plugin.sock")
    yield orm, plugin, socks, tmp_path
    await plugin.stop()
    for endpoint in list(orm.plugins.values()):
        await endpoint.stop()
    await registration.stop(None)


async def test_plugin_allocation_lands_in_checkpoint_and_pod_resources(rig) -> None:
    orm, plugin, socks, tmp_path = rig
    await plugin.register(socks / REGISTRATION_SOCKET, "qrm_cpu_plugin.sock")
    assert "cpu" in orm.plugins

    await orm.admit(dedicated("q", 2))

    (hint_call,) = plugin.called("GetTopologyHints")
    assert hint_call.pod_uid == "q" and hint_call.resource_requests["cpu"] == 2.0
    (allocate,) = plugin.called("Allocate")
    assert list(allocate.hint.nodes) == [1] and allocate.hint.preferred
    assert orm.allocations.cpuset_for("q", "c0") == {5, 6}

    (row,) = CheckpointStore(tmp_path / "state").load()
    assert (row.provider, row.result, row.numa_nodes) == ("cpu", "5,6", (1,))

    socket = tmp_path / "pr" / "kubelet.sock"
    server = await start_pod_resources_server(socket, PodResourcesServicer(orm.allocations, orm.layout.node_memory))
    try:
        async with grpc.aio.insecure_channel("unix://" + str(socket)) as channel:
            listed = await pr_grpc.PodResourcesListerStub(channel).List(pr.ListPodResourcesRequest())
    finally:
        await server.stop(None)
    (pod,) = listed.pod_resources
    assert (pod.name, pod.namespace) == ("pod-q", "default")
    assert list(pod.containers[0].cpu_ids) == [5, 6]


async def test_a_vanished_plugin_keeps_its_allocations_until_it_returns(rig) -> None:
    orm, plugin, socks, _ = rig
    await plugin.register(socks / REGISTRATION_SOCKET, "qrm_cpu_plugin.sock")
    await orm.admit(dedicated("q", 1))
    await plugin.stop()

    with pytest.raises(AdmissionError, match="resource plugin cpu"):
        await orm.admit(dedicated("r", 1))
    assert orm.allocations.cpuset_for("q", "c0") == {5}  # still in force

    await orm.remove_pod("q")  # the plugin cannot hear it now
    await plugin.serve(socks / "qrm_cpu_plugin.sock")
    await plugin.register(socks / REGISTRATION_SOCKET, "qrm_cpu_plugin.sock")
    assert [m.pod_uid for m in plugin.called("RemovePod")] == ["q"]  # delivered on re-registration
    await orm.admit(dedicated("r", 1))
    assert orm.allocations.cpuset_for("r", "c0") == {6}


async def test_a_registration_with_an_unknown_version_is_refused(rig) -> None:
    orm, plugin, socks, _ = rig
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await plugin.register(socks / REGISTRATION_SOCKET, "qrm_cpu_plugin.sock", version="v1beta1")
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "unsupported API version" in info.value.details()
    assert orm.plugins == {}


async def test_an_endpoint_outside_the_socket_dir_is_refused(rig) -> None:
    orm, plugin, socks, _ = rig
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await plugin.register(socks / REGISTRATION_SOCKET, "../elsewhere.sock")
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT


async def test_the_registration_socket_is_private(rig) -> None:
    _, _, socks, _ = rig
    assert (socks / REGISTRATION_SOCKET).stat().st_mode & 0o777 == 0o600


async def test_a_malformed_plugin_allocation_rejects_the_pod_and_changes_nothing(rig) -> None:
    orm, plugin, socks, tmp_path = rig
    plugin.free = ["3-1"]  # handed out as the result: a descending range is not a cpu list
    await plugin.register(socks / REGISTRATION_SOCKET, "qrm_cpu_plugin.sock")
    with pytest.raises(AdmissionError, match="bad allocation"):
        await orm.admit(dedicated("q", 1))
    assert orm.table.entries() == ()
    assert not (tmp_path / "state" / "orm_checkpoint").exists()


async def test_reconcile_takes_the_plugins_current_allocation(rig) -> None:
    orm, plugin, socks, tmp_path = rig
    await plugin.register(socks / REGISTRATION_SOCKET, "qrm_cpu_plugin.sock")
    await orm.admit(dedicated("q", 1))
    info = pb.ResourceAllocationInfo(oci_property_name="CpusetCpus", allocated_quantity=1.0,
                                     allocation_result="7", topology_assignments={1: 1})
    plugin.listing = pb.GetResourcesAllocationResponse(pod_resources={
        "q": pb.ContainerResources(container_resources={
            "c0": pb.ResourceAllocation(resource_allocation={"cpu": info})}),
        "stranger": pb.ContainerResources()})
    assert await orm.reconcile_plugins() == 1
    assert orm.allocations.cpuset_for("q", "c0") == {7}
    assert [r.result for r in CheckpointStore(tmp_path / "state").load()] == ["7"]
    assert await orm.reconcile_plugins() == 0


async def test_admit_now_defers_when_a_plugin_must_be_asked(rig) -> None:
    from koordlet.orm.manager import AdmissionDeferred

    orm, plugin, socks, _ = rig
    await plugin.register(socks / REGISTRATION_SOCKET, "qrm_cpu_plugin.sock")
    with pytest.raises(AdmissionDeferred, match="resource plugin cpu"):
        orm.admit_now(dedicated("q", 1))
    assert plugin.called("Allocate") == [] and orm.table.entries() == ()
