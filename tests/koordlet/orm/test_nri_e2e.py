"""The ORM under the runtime hooks' NRI plugin, with the runtime-side test peer as containerd,
as the issue's containerd check describes it on a 2-CPU host (--topology-policy-name
single-numa-node --reserved-cpus 0): a dedicated_cores pod asking one whole CPU gets that CPU
alone, a shared pod's container leaves it, an unsatisfiable second one fails with the reason
in the runtime's error, and PodResources List reports exactly those CPUs."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from koordlet.daemon.cli import parse_args
from koordlet.daemon.wiring import build_agents
from koordlet.orm.agent import SPEC as ORM
from koordlet.runtimehooks.agent import SPEC as RUNTIME_HOOKS
from koordlet.util.host_facts import HostFacts
from nri.testing import RuntimePeer
from nri.testing.relay import RuntimeOperationFailed
from proto.k8s.podresources.v1 import api_pb2 as pr
from proto.k8s.podresources.v1 import api_pb2_grpc as pr_grpc
from tests.koordlet.hubs_helper import hubs_for
from tests.koordlet.runtimehooks.nri_pods import nri_container, nri_pod
from tests.nri.conftest import socket_path  # noqa: F401  (fixture)
from tests.system.fake_trees import build_topology_tree

DEDICATED = {"katalyst.kubewharf.io/qos_level": "dedicated_cores"}


@pytest.fixture(params=[()], ids=["default"])
def extra_flags(request) -> tuple[str, ...]:
    return request.param


@pytest.fixture
async def wired(tmp_path: Path, socket_path, extra_flags):  # noqa: F811
    host = build_topology_tree(tmp_path / "m", sockets=1, nodes_per_socket=1, cores_per_node=2, threads_per_core=1)
    config = parse_args([*extra_flags,
        "--runtime-hooks-nri-socket-path", str(socket_path), "--runtime-hooks-mode", "nri",
        "--sys-root-dir", str(host.sys_root), "--cgroup-root-dir", str(tmp_path / "none"),
        "--state-dir", str(tmp_path / "state"), "--topology-policy-name", "single-numa-node",
        "--reserved-cpus", "0", "--pod-resources-server-endpoint", "unix:" + str(tmp_path / "pr.sock"),
        "--qrm-socket-dirs", str(tmp_path / "qrm")])
    hubs = hubs_for(config, facts=HostFacts(host))
    modules = build_agents(hubs, (ORM, RUNTIME_HOOKS))
    for module in modules:
        await module.start()
    async with RuntimePeer(socket_path) as peer:
        await peer.wait_plugins(1)
        yield peer, modules[0], tmp_path / "pr.sock"
    for module in reversed(modules):
        await module.stop()


async def test_dedicated_pod_gets_its_cpu_alone_and_the_second_fails(wired) -> None:
    peer, orm, pr_socket = wired
    first = nri_pod("d1", "LSR", DEDICATED)
    await peer.run_pod_sandbox(first)
    created = await peer.create_container(first, nri_container(first, "main", shares=1024, quota=100000))
    assert created.linux.resources.cpu.cpus == "1"

    # the informer hears of the container after the answer, at the latest before the plugin
    # handles the next event (FollowUps): no wait needed here
    shared = nri_pod("s1", "LS")
    await peer.run_pod_sandbox(shared)
    ls = await peer.create_container(shared, nri_container(shared, "app", shares=512))
    assert ls.linux.resources.cpu.cpus == "0"

    second = nri_pod("d2", "LSR", DEDICATED)
    await peer.run_pod_sandbox(second)
    with pytest.raises(RuntimeOperationFailed, match="single-numa-node cannot place cpu=1000 "
                                                     r"\(cpu: no NUMA placement has room"):
        await peer.create_container(second, nri_container(second, "main", shares=1024, quota=100000))

    async with grpc.aio.insecure_channel("unix://" + str(pr_socket)) as channel:
        listed = await pr_grpc.PodResourcesListerStub(channel).List(pr.ListPodResourcesRequest())
    cpus = {p.name: [list(c.cpu_ids) for c in p.containers] for p in listed.pod_resources}
    assert cpus["pod-d1"] == [[1]]
    assert cpus.get("pod-s1", [[]]) == [[]]
    assert orm.allocations.shared_pool() == {0}


@pytest.mark.parametrize("extra_flags", [("--cpu-manager-policy", "static")], ids=["static"])
async def test_static_cpu_policy_pins_a_guaranteed_ls_pod(wired) -> None:
    peer, orm, _ = wired
    guaranteed = nri_pod("g1", "LSR")  # cgroup parent kubepods/pod<uid>: Guaranteed
    guaranteed.labels["koordinator.sh/qosClass"] = "LS"
    await peer.run_pod_sandbox(guaranteed)
    created = await peer.create_container(guaranteed, nri_container(guaranteed, "main", shares=1024, quota=100000))
    assert created.linux.resources.cpu.cpus == "1"
    other = nri_pod("s2", "LS")
    await peer.run_pod_sandbox(other)
    ls = await peer.create_container(other, nri_container(other, "app", shares=512))
    assert ls.linux.resources.cpu.cpus == "0"
