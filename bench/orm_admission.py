"""ORM admission and PodResources List on a 256-CPU / 8-NUMA fake topology with 500 pods placed.

Prints, p50/p99 in microseconds:
- admit+allocate of one dedicated pod (1 whole CPU, NUMA-bound memory) with 500 pods placed,
  policy single-numa-node: the decision alone (wall time and the thread's CPU time), and with
  the checkpoint written (fsync, off the loop) as the ORM does on every change;
- PodResources List over gRPC on a unix socket with those 500 pods;
- PodResources List over gRPC on a unix socket with those 500 pods (informer pods + allocations);
- the floor: one gRPC unary round trip on a unix socket (an empty List), in the same run,
  and each figure's ratio to it; for the checkpointed admission also the raw disk floor
  (the same bytes written to a temp file, fsynced, renamed, directory fsynced).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import MappingProxyType

import grpc

from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.daemon.logs import configure_logging
from koordlet.orm.checkpoint import CheckpointStore
from koordlet.orm.cpu_layout import CpuLayout
from koordlet.orm.manager import Orm
from koordlet.orm.podresources.server import PodResourcesServicer, start_pod_resources_server
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import ContainerInfo, ContainerState, NodeInfo, PodInfo, SandboxState
from koordlet.topology.policy import PolicyName, new_policy
from koordlet.topology.request import ContainerRequest, ContainerType, PodRequest
from proto.k8s.podresources.v1 import api_pb2 as pb
from proto.k8s.podresources.v1 import api_pb2_grpc as pb_grpc
from system.topology import read_cpu_topology
from tests.system.fake_trees import build_topology_tree

GiB = 1 << 30
DEDICATED = 200  # 1 CPU each, NUMA-bound: 200 of 256 CPUs held exclusively
SHARED = 300
ROUNDS = 400


def request(uid: str, cpu_milli: int, exclusive: bool, memory: int = 0) -> PodRequest:
    requests = {"cpu": cpu_milli, **({"memory": memory} if memory else {})}
    return PodRequest(uid, "bench", uid, (ContainerRequest(
        uid, "bench", uid, "main", ContainerType.MAIN, 0, MappingProxyType(requests),
        exclusive_cpus=exclusive, numa_binding=exclusive, qos_level="dedicated_cores" if exclusive else ""),))


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1e6


def line(label: str, samples: list[float], floor: float | None = None) -> None:
    p50, p99 = pct(samples, 0.5), pct(samples, 0.99)
    ratio = "" if floor is None else "  (p50 = %.1fx floor)" % (p50 / floor)
    print("%-52s p50 %8.1f us  p99 %8.1f us%s" % (label, p50, p99, ratio))


async def placed_orm(layout: CpuLayout, store: CheckpointStore | None) -> Orm:
    orm = Orm(layout, frozenset({0, 128}), new_policy(PolicyName.SINGLE_NUMA_NODE, layout.numa_nodes), store)
    for i in range(DEDICATED):
        await orm.admit(request("d%03d" % i, 1000, True, GiB // 4))
    for i in range(SHARED):
        await orm.admit(request("s%03d" % i, 500, False))
    return orm


async def admission_samples(orm: Orm) -> tuple[list[float], list[float]]:
    """(wall time, this thread's CPU time) per admission: on a shared 2-vCPU machine the
    wall p99 mostly measures other processes; the CPU time is the admission's own work."""
    wall, cpu = [], []
    for i in range(ROUNDS):
        pod = request("probe%d" % i, 1000, True, GiB // 4)
        start, start_cpu = time.perf_counter(), time.thread_time()
        await orm.admit(pod)
        cpu.append(time.thread_time() - start_cpu)
        wall.append(time.perf_counter() - start)
        await orm.remove_pod(pod.pod_uid)
    return wall, cpu


async def grpc_samples(stub_call, message, rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        await stub_call(message)
        samples.append(time.perf_counter() - start)
    return samples


def orm_pods() -> list[str]:
    return ["d%03d" % i for i in range(DEDICATED)] + ["s%03d" % i for i in range(SHARED)]


def pod_info(uid: str) -> PodInfo:
    return PodInfo(uid, uid, "bench", "sb-" + uid, SandboxState.READY, "kubepods/pod" + uid,
                   PodQoS(KoordQoSClass.LS),
                   containers=(ContainerInfo("id-" + uid, "main", uid, ContainerState.RUNNING, ""),))


class Empty(pb_grpc.PodResourcesListerServicer):
    async def List(self, request, context):
        return pb.ListPodResourcesResponse()


async def main() -> None:
    configure_logging("warning", "json", sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        host = build_topology_tree(root / "m", sockets=2, nodes_per_socket=4, cores_per_node=16, threads_per_core=2)
        layout = CpuLayout.of(read_cpu_topology(host))
        print("orm_admission: %d CPUs, %d NUMA nodes, %d pods placed (%d dedicated), policy single-numa-node"
              % (len(layout.cpus), len(layout.numa_nodes), DEDICATED + SHARED, DEDICATED))

        floor_server = grpc.aio.server()
        pb_grpc.add_PodResourcesListerServicer_to_server(Empty(), floor_server)
        floor_server.add_insecure_port("unix://" + str(root / "floor.sock"))
        await floor_server.start()
        async with grpc.aio.insecure_channel("unix://" + str(root / "floor.sock")) as channel:
            call = pb_grpc.PodResourcesListerStub(channel).List
            await grpc_samples(call, pb.ListPodResourcesRequest(), 50)
            floor = statistics.median(await grpc_samples(call, pb.ListPodResourcesRequest(), ROUNDS)) * 1e6
        await floor_server.stop(None)
        print("%-52s p50 %8.1f us" % ("floor: gRPC unary round trip, unix socket", floor))

        orm = await placed_orm(layout, None)
        wall, cpu = await admission_samples(orm)
        line("admit+allocate, decision only (wall)", wall, floor)
        line("admit+allocate, decision only (thread CPU time)", cpu)
        store = CheckpointStore(root / "state")
        durable = await placed_orm(layout, store)
        wall, _ = await admission_samples(durable)
        line("admit+allocate, checkpoint written (%s)" % (root / "state"), wall, floor)
        blob = store.path.read_bytes()
        raw = CheckpointStore(root / "raw")
        disk = []
        for _ in range(ROUNDS // 4):
            start = time.perf_counter()
            raw.write_blob(blob)
            disk.append(time.perf_counter() - start)
        line("floor: temp+fsync+rename of the same %d bytes" % len(blob), disk)

        socket = root / "pr.sock"
        states = StaticStates(NodeInfo("bench"), [pod_info(uid) for uid in orm_pods()])
        server = await start_pod_resources_server(
            socket, PodResourcesServicer(orm.allocations, layout.node_memory, states))
        async with grpc.aio.insecure_channel("unix://" + str(socket)) as channel:
            call = pb_grpc.PodResourcesListerStub(channel).List
            await grpc_samples(call, pb.ListPodResourcesRequest(), 20)
            line("PodResources List, %d pods (%d with exclusive CPUs)" % (len(states.pods()), DEDICATED),
                 await grpc_samples(call, pb.ListPodResourcesRequest(), 200), floor)
        await server.stop(None)


if __name__ == "__main__":
    asyncio.run(main())
