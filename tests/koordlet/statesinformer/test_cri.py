"""The CRI client and poll against a real gRPC server on a unix socket serving our proto."""

from __future__ import annotations

from pathlib import Path

import pytest

from koordlet.apis.qos import KoordQoSClass
from koordlet.statesinformer.cri_client import CriClient, CriError, grpc_target
from koordlet.statesinformer.cri_poll import CriPoller
from koordlet.statesinformer.model import ContainerState, NodeInfo, SandboxState, Source
from koordlet.statesinformer.store import PodStore
from proto.cri import api_pb2
from system.cgroup_layout import CgroupDriver, QoSTier, container_dir, pod_dir
from tests.koordlet.statesinformer.cri_server import FakeContainer, FakeRuntime, FakeSandbox, serve

UID = "0a1b2c3d-0000-4000-8000-00000000abcd"
SD = UID.replace("-", "_")


@pytest.fixture
async def runtime(tmp_path: Path):
    fake = FakeRuntime()
    socket = tmp_path / "containerd.sock"
    server = await serve(fake, socket)
    client = CriClient("unix://" + str(socket), timeout_s=2.0)
    yield fake, client
    await client.close()
    await server.stop(None)


def _cgroupfs_pod(fake: FakeRuntime, tier: str = "besteffort") -> None:
    fake.sandboxes["sb1"] = FakeSandbox("sb1", UID, "web", "/kubepods/%s/pod%s" % (tier, UID),
                                        annotations={"koordinator.sh/qosClass": "BE"} if tier == "besteffort" else {})
    fake.containers["c1"] = FakeContainer("c1", "sb1", "main", "/kubepods/%s/pod%s/c1" % (tier, UID))


@pytest.mark.parametrize(("endpoint", "target"), [
    ("unix:///run/containerd/containerd.sock", "unix:/run/containerd/containerd.sock"),
    ("/run/crio/crio.sock", "unix:/run/crio/crio.sock"),
    ("localhost:1234", "localhost:1234"),
])
def test_endpoints_become_grpc_targets(endpoint: str, target: str) -> None:
    assert grpc_target(endpoint) == target


async def test_round_trip_of_every_call(runtime) -> None:
    fake, client = runtime
    _cgroupfs_pod(fake)
    version = await client.version()
    assert (version.runtime_name, version.runtime_api_version) == ("containerd", "v1")
    (sandbox,) = await client.list_pod_sandboxes()
    assert (sandbox.id, sandbox.metadata.uid, sandbox.state) == ("sb1", UID, api_pb2.SANDBOX_READY)
    status = await client.pod_sandbox_status("sb1")
    assert "cgroup_parent" in status.info["info"]
    (container,) = await client.list_containers()
    assert (container.id, container.pod_sandbox_id, container.metadata.name) == ("c1", "sb1", "main")
    reply = await client.container_status("c1")
    assert reply.status.resources.linux.cpu_shares == 512
    await client.stop_container("c1", grace_period_s=0)
    assert fake.containers["c1"].state == api_pb2.CONTAINER_EXITED
    assert fake.calls == ["Version", "ListPodSandbox", "PodSandboxStatus", "ListContainers", "ContainerStatus",
                          "StopContainer"]


async def test_an_unknown_container_is_not_found(runtime) -> None:
    _, client = runtime
    with pytest.raises(CriError) as caught:
        await client.container_status("nope")
    assert caught.value.not_found and not caught.value.unavailable


async def test_no_runtime_at_the_socket_is_unavailable(tmp_path: Path) -> None:
    client = CriClient(str(tmp_path / "absent.sock"), timeout_s=0.5)
    try:
        with pytest.raises(CriError) as caught:
            await client.list_pod_sandboxes()
        assert caught.value.unavailable
    finally:
        await client.close()


async def test_poll_fills_the_store_with_cgroup_dirs_and_resources(runtime) -> None:
    fake, client = runtime
    _cgroupfs_pod(fake)
    store = PodStore(NodeInfo("n"), expected=[Source.CRI])
    await CriPoller(client, store).poll_once()
    assert store.synced()
    pod = store.pod(UID)
    assert pod.sources == {Source.CRI} and pod.state is SandboxState.READY
    assert pod.cgroup_parent == pod_dir(CgroupDriver.CGROUPFS, QoSTier.BESTEFFORT, UID)
    assert (pod.qos.effective, pod.qos.k8s) == (KoordQoSClass.BE, QoSTier.BESTEFFORT)
    (container,) = pod.containers
    assert container.cgroup_dir == container_dir(CgroupDriver.CGROUPFS, QoSTier.BESTEFFORT, UID, "c1")
    assert (container.pid, container.linux.cpu_shares, container.linux.memory_limit) == (4242, 512, None)
    assert container.state is ContainerState.RUNNING


async def test_systemd_driver_and_old_containerd_info(runtime) -> None:
    fake, client = runtime
    fake.old_containerd = True  # sandbox info without config: the parent comes from the pause container's path
    slice_name = "kubepods-burstable-pod%s.slice" % SD
    fake.sandboxes["sb1"] = FakeSandbox("sb1", UID, "web", slice_name)
    fake.containers["c1"] = FakeContainer("c1", "sb1", "main", slice_name + ":cri-containerd:c1")
    store = PodStore(NodeInfo("n"))
    await CriPoller(client, store).poll_once()
    pod = store.pod(UID)
    assert pod.cgroup_parent == pod_dir(CgroupDriver.SYSTEMD, QoSTier.BURSTABLE, UID)
    assert pod.containers[0].cgroup_dir == container_dir(CgroupDriver.SYSTEMD, QoSTier.BURSTABLE, UID, "c1")
    assert pod.qos.effective is KoordQoSClass.LS


async def test_steady_polls_make_only_the_two_list_calls(runtime) -> None:
    fake, client = runtime
    _cgroupfs_pod(fake)
    store = PodStore(NodeInfo("n"))
    poller = CriPoller(client, store)
    await poller.poll_once()
    fake.calls.clear()
    await poller.poll_once()
    assert fake.calls == ["ListPodSandbox", "ListContainers"]
    fake.containers["c2"] = FakeContainer("c2", "sb1", "side", "/kubepods/besteffort/pod%s/c2" % UID,
                                          state=api_pb2.CONTAINER_CREATED)
    fake.calls.clear()
    await poller.poll_once()
    assert fake.calls == ["ListPodSandbox", "ListContainers", "ContainerStatus"]  # only the new one
    fake.containers["c2"].state = api_pb2.CONTAINER_RUNNING  # a state change asks for the status again
    fake.containers["c1"].state = api_pb2.CONTAINER_EXITED  # an exited one is not asked about
    fake.calls.clear()
    await poller.poll_once()
    assert fake.calls == ["ListPodSandbox", "ListContainers", "ContainerStatus"]
    assert [c.id for c in store.pod(UID).containers] == ["c2"]


async def test_exited_and_removed_containers_leave_the_store_and_release_their_cgroup(runtime) -> None:
    fake, client = runtime
    _cgroupfs_pod(fake)
    gone: list[str] = []
    store = PodStore(NodeInfo("n"), on_cgroup_gone=gone.append)
    poller = CriPoller(client, store)
    await poller.poll_once()
    fake.containers["c1"].state = api_pb2.CONTAINER_EXITED
    await poller.poll_once()
    assert store.pod(UID).containers == ()
    assert gone == [container_dir(CgroupDriver.CGROUPFS, QoSTier.BESTEFFORT, UID, "c1")]
    del fake.containers["c1"], fake.sandboxes["sb1"]
    await poller.poll_once()
    assert store.pods() == ()
    assert gone[-1] == pod_dir(CgroupDriver.CGROUPFS, QoSTier.BESTEFFORT, UID)


class _VanishingRuntime(FakeRuntime):
    """Lists a container whose status is then not found: removed in between."""

    async def ListContainers(self, request, context):
        reply = await super().ListContainers(request, context)
        self.containers.pop("c1", None)
        return reply


async def test_a_container_removed_between_list_and_status_is_skipped(tmp_path: Path) -> None:
    fake = _VanishingRuntime()
    _cgroupfs_pod(fake)
    server = await serve(fake, tmp_path / "c.sock")
    client = CriClient(str(tmp_path / "c.sock"))
    try:
        store = PodStore(NodeInfo("n"))
        await CriPoller(client, store).poll_once()
        assert store.pod(UID) is not None and store.pod(UID).containers == ()
    finally:
        await client.close()
        await server.stop(None)
