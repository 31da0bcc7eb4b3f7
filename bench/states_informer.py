"""Applying one NRI event to the states informer with 1,000 pods known.

The store holds 1,000 pods × 2 containers fed by an NRI Synchronize, with the
labels and annotations containerd 2.3.4 really sends (taken from the golden
capture's pod). Measured per event, p50/p99:

- update: UpdateContainer with a new kubelet ask (a real change: one UPDATED event)
- start:  StartContainer of a known running container (no change: no event)
- create+remove: a new container created, then removed (two events, cgroup released)
- update, fresh messages: the update again, but with the sandbox and container parsed from
  their bytes just before the call (untimed), as the plugin hands over a request it has just
  read; the lines above reuse 1,000 messages built at start, cold in the caches by the time
  each comes round again

Floor, in the same run: a dict lookup plus dataclasses.replace of a ContainerInfo,
the least any store holding frozen values must do per event.

Memory: what the store and the feed hold for those 1,000 pods (tracemalloc: Python
allocations; a protobuf message kept would live in upb's arenas, which it does not see,
so the feed keeps none).

Then one steady-state CRI poll (nothing new: the two list calls, conversion, merge,
no event) over real gRPC on a unix socket against an in-process runtime holding the
same 1,000 pods; floor: the two raw list calls alone.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import gc
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from koordlet.statesinformer.model import ContainerInfo, ContainerState, NodeInfo
from koordlet.statesinformer.nri_feed import ContainerChange, NriFeed
from koordlet.statesinformer.store import PodStore
from proto.nri.pkg.api.v1alpha1 import api_pb2

PODS = 1000
ROUNDS = 5000


def _template() -> tuple[api_pb2.PodSandbox, api_pb2.Container]:
    import pytest

    try:
        from tests.koordlet.statesinformer.nri_capture import first

        sync = first("Synchronize")
        return sync.pods[0], sync.containers[0]
    except (Exception, pytest.skip.Exception):  # no capture at hand (the loader skips, a BaseException): a plain pod
        sandbox = api_pb2.PodSandbox(name="p", namespace="default", labels={"app": "x"})
        return sandbox, api_pb2.Container(name="main", state=api_pb2.CONTAINER_RUNNING)


def _pod(template: tuple[api_pb2.PodSandbox, api_pb2.Container], n: int) -> tuple[api_pb2.PodSandbox, list]:
    sandbox = copy.deepcopy(template[0])
    uid = "00000000-0000-4000-8000-%012d" % n
    sandbox.id, sandbox.uid, sandbox.name = "sb%064d" % n, uid, "pod-%d" % n
    # the pod's own name, uid and sandbox id in its labels and annotations too, as kubelet writes them
    own = ((template[0].uid, uid), (template[0].id, sandbox.id), (template[0].name, sandbox.name))
    for table in (sandbox.labels, sandbox.annotations):
        for key, value in list(table.items()):
            for theirs, ours in own:
                if theirs:
                    value = value.replace(theirs, ours)
            table[key] = value
    sandbox.linux.cgroup_parent = "/kubepods/burstable/pod" + uid
    containers = []
    for k, name in enumerate(("main", "side")):
        container = copy.deepcopy(template[1])
        container.id, container.name, container.pod_sandbox_id = "%062d%02d" % (n, k), name, sandbox.id
        container.state = api_pb2.CONTAINER_RUNNING
        container.linux.cgroups_path = "%s/%s" % (sandbox.linux.cgroup_parent, container.id)
        containers.append(container)
    return sandbox, containers


def _percentiles(samples: list[int]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2] / 1000, ordered[int(len(ordered) * 0.99)] / 1000


def _memory(pods: list[tuple[api_pb2.PodSandbox, list]]) -> None:
    gc.collect()
    tracemalloc.start()
    store = PodStore(NodeInfo("bench"), on_cgroup_gone=lambda d: None)
    feed = NriFeed(store)
    feed.nri_synchronized([p[0] for p in pods], [c for p in pods for c in p[1]])
    store.pods()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print("states_informer: memory held for %d pods x 2 containers: %.2f MiB, %.0f bytes a pod (tracemalloc)"
          % (len(store.pods()), held / 2**20, held / len(pods)))


def main() -> None:
    template = _template()
    pods = [_pod(template, n) for n in range(PODS)]
    _memory(pods)
    events: list[object] = []
    store = PodStore(NodeInfo("bench"), on_cgroup_gone=lambda d: None)
    store.subscribe(events.append)
    feed = NriFeed(store)
    feed.nri_synchronized([p[0] for p in pods], [c for p in pods for c in p[1]])
    assert len(store.pods()) == PODS

    asks = []
    for shares in (1024, 2048):
        ask = api_pb2.LinuxResources()
        ask.cpu.shares.value = shares
        asks.append(ask)

    gc.collect()
    gc.disable()
    try:
        update, start, cycle, floor = [], [], [], []
        table = {c.id: ContainerInfo(c.id, c.name, "u", ContainerState.RUNNING, "d") for p in pods for c in p[1]}
        for i in range(ROUNDS):
            sandbox, containers = pods[(i * 7919) % PODS]
            extra = copy.copy(containers[1])  # building the message is the runtime's work, not timed
            extra.id, extra.name = "x%063d" % i, "extra"
            t0 = time.perf_counter_ns()
            # each pod is met once per PODS rounds: its ask alternates between visits, so every update changes it
            feed.nri_container_event(ContainerChange.UPDATED, sandbox, containers[0], asks[(i // PODS) % 2])
            t1 = time.perf_counter_ns()
            feed.nri_container_event(ContainerChange.STARTED, sandbox, containers[1])
            t2 = time.perf_counter_ns()
            feed.nri_container_event(ContainerChange.CREATED, sandbox, extra)
            feed.nri_container_event(ContainerChange.REMOVED, sandbox, extra)
            t3 = time.perf_counter_ns()
            known = table[containers[0].id]
            dataclasses.replace(known, state=ContainerState.RUNNING)
            t4 = time.perf_counter_ns()
            update.append(t1 - t0)
            start.append(t2 - t1)
            cycle.append(t3 - t2)
            floor.append(t4 - t3)
        wires = [(p[0].SerializeToString(), p[1][0].SerializeToString()) for p in pods]
        fresh = []
        for i in range(ROUNDS):
            sandbox_wire, container_wire = wires[(i * 7919) % PODS]
            sandbox, container = api_pb2.PodSandbox.FromString(sandbox_wire), api_pb2.Container.FromString(container_wire)
            t0 = time.perf_counter_ns()
            # the other ask than the loop above gave at the same visit: a change again
            feed.nri_container_event(ContainerChange.UPDATED, sandbox, container, asks[(i // PODS + 1) % 2])
            fresh.append(time.perf_counter_ns() - t0)
    finally:
        gc.enable()
    assert len(store.pods()) == PODS and store.counts()[("containers", "merged")] == 2 * PODS
    # the Synchronize adds; one per update, two per create+remove, one per fresh update
    assert len(events) == PODS + 4 * ROUNDS

    floor_p50, floor_p99 = _percentiles(floor)
    print("states_informer: %d pods x 2 containers known, %d rounds, capture-sized labels/annotations"
          % (PODS, ROUNDS))
    for name, samples in (("update (changed ask, 1 event)", update), ("start (no change, 0 events)", start),
                          ("create+remove (2 events)", cycle), ("update, fresh messages (1 event)", fresh)):
        p50, p99 = _percentiles(samples)
        print("states_informer: %-32s p50 %7.1f us  p99 %7.1f us  (x%.1f / x%.1f the floor)"
              % (name, p50, p99, p50 / floor_p50, p99 / floor_p99))
    print("states_informer: floor (dict lookup + dataclasses.replace) p50 %.2f us  p99 %.2f us  mean %.2f us"
          % (floor_p50, floor_p99, statistics.mean(floor) / 1000))
    print("states_informer: events emitted: %d" % len(events))


async def _cri_poll(pods: int = PODS, rounds: int = 30) -> None:
    from koordlet.statesinformer.cri_client import CriClient
    from koordlet.statesinformer.cri_poll import CriPoller
    from tests.koordlet.statesinformer.cri_server import FakeContainer, FakeRuntime, FakeSandbox, serve

    runtime = FakeRuntime()
    for n in range(pods):
        uid = "00000000-0000-4000-8000-%012d" % n
        parent = "/kubepods/burstable/pod" + uid
        runtime.sandboxes["sb%d" % n] = FakeSandbox("sb%d" % n, uid, "pod-%d" % n, parent,
                                                    labels={"app": "a%d" % n}, annotations={"k": "v"})
        for k in range(2):
            cid = "c%d-%d" % (n, k)
            runtime.containers[cid] = FakeContainer(cid, "sb%d" % n, "n%d" % k, "%s/%s" % (parent, cid))
    with tempfile.TemporaryDirectory() as tmp:
        socket = Path(tmp) / "cri.sock"
        server = await serve(runtime, socket)
        client = CriClient(str(socket), timeout_s=30)
        store = PodStore(NodeInfo("bench"))
        poller = CriPoller(client, store)
        try:
            started = time.perf_counter()
            await poller.poll_once()
            first = time.perf_counter() - started
            assert len(store.pods()) == pods
            polls, raw = [], []
            for _ in range(rounds):
                c0 = time.process_time()
                await poller.poll_once()
                c1 = time.process_time()
                await client.list_pod_sandboxes()
                await client.list_containers()
                c2 = time.process_time()
                polls.append(c1 - c0)
                raw.append(c2 - c1)
        finally:
            await client.close()
            await server.stop(None)
    poll, floor = statistics.median(polls) * 1000, statistics.median(raw) * 1000
    print("states_informer: CRI first poll (%d sandboxes + %d containers, status calls for all): %.0f ms wall"
          % (pods, 2 * pods, first * 1000))
    print("states_informer: CRI steady poll CPU (client and in-process server): median %.1f ms; floor (the two "
          "list calls alone) %.1f ms; x%.1f" % (poll, floor, poll / floor))


if __name__ == "__main__":
    main()
    asyncio.run(_cri_poll())
