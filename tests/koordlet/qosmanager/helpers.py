"""Test doubles for the QoS manager: an in-memory metric cache, pod builders, a context."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Iterable

from prometheus_client import CollectorRegistry

from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.qosmanager.dirs import QoSDirs
from koordlet.qosmanager.eviction import EvictionPath, EvictionReason, Evictor
from koordlet.qosmanager.framework import QoSContext
from koordlet.qosmanager.metrics import QoSMetrics
from koordlet.slo.node_slo import NodeSLO
from koordlet.slo.source import StaticNodeSLO
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import (
    ContainerInfo,
    ContainerState,
    NodeInfo,
    PodInfo,
    Resources,
    SandboxState,
)
from resourceexecutor import CgroupFileIO, ResourceExecutor
from system.cgroup_files import CgroupFiles
from system.cgroup_readers import CgroupReader
from system.host import Host
from system.topology import CpuTopology


class FedMetricStore(MetricStore):
    """The daemon's metric store, fed by hand in tests."""

    def put(self, metric: Metric, value: float, at: float, pod_uid: str = "", container_id: str = "") -> None:
        self.append([Sample(SeriesKey.of(metric, pod_uid, container_id), at, value)])


def feed(cache: MetricStore, collected: Iterable, now: float) -> None:
    """Append what a metrics advisor collector returned: Samples, or (key, value) pairs
    stamped `now` (the collectors' newer, cheaper form)."""
    cache.append([item if isinstance(item, Sample) else Sample(item[0], now, item[1]) for item in collected])


def pod(uid: str, qos: KoordQoSClass, cgroup_parent: str = "", *, priority: int | None = None,
        containers: tuple[ContainerInfo, ...] = (), annotations: dict[str, str] | None = None,
        name: str | None = None) -> PodInfo:
    return PodInfo(uid=uid, name=name or f"pod-{uid}", namespace="default", sandbox_id=f"sb-{uid}",
                   state=SandboxState.READY, cgroup_parent=cgroup_parent, qos=PodQoS(qos, koord=qos),
                   annotations=annotations or {}, priority=priority, containers=containers)


def container(cid: str, pod_uid: str, cgroup_dir: str, *, requests: dict[str, int] | None = None,
              limits: dict[str, int] | None = None) -> ContainerInfo:
    return ContainerInfo(id=cid, name=f"c-{cid}", pod_uid=pod_uid, state=ContainerState.RUNNING,
                         cgroup_dir=cgroup_dir, spec=Resources(requests or {}, limits or {}))


class RecordingEvictor:
    name = "recording"

    def __init__(self, succeed: bool = True) -> None:
        self.calls: list[tuple[str, EvictionReason]] = []
        self.succeed = succeed

    async def evict(self, pod: PodInfo, reason: EvictionReason, message: str) -> bool:
        self.calls.append((pod.uid, reason))
        return self.succeed


@dataclass
class Clock:
    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    """A QoSContext over a host (fake tree or the real one) with hand-fed hubs."""

    host: Host
    node: NodeInfo
    prefix: str = ""
    topology: CpuTopology | None = None
    evictor: Evictor = field(default_factory=RecordingEvictor)
    clock: Callable[[], float] = field(default_factory=Clock)  # a Clock (settable .now) unless given
    slo: StaticNodeSLO = field(default_factory=StaticNodeSLO)
    io: CgroupFileIO | None = None  # FakeTreeIO on fake trees
    keep_open: bool = False  # the reader keeps fds open (the daemon does; tests rewrite files)

    def __post_init__(self) -> None:
        self.states = StaticStates(self.node)
        self.cache = FedMetricStore(clock=self.clock)
        self.executor = ResourceExecutor(CgroupFiles(self.host), io=self.io)
        self.reader = CgroupReader(self.executor.files, keep_open=self.keep_open)
        self.registry = CollectorRegistry()
        self.metrics = QoSMetrics(self.registry, self.node.name)
        self.ctx = QoSContext(self.states, self.cache, self.slo, self.executor, self.reader,
                              EvictionPath(self.evictor, self.metrics, self.clock), self.metrics,
                              QoSDirs(prefix=self.prefix), self.host, self.topology, self.clock)

    def set_slo(self, slo: NodeSLO) -> None:
        self.slo.set(slo)

    def close(self) -> None:
        self.executor.close()
        self.reader.close()

    def metric(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)


def loop_turns_during(work: Callable[[], Awaitable[object]]) -> int:
    """How many times another task ran while `work` ran on the same event loop: how often
    `work` gave the loop back."""
    turns = 0

    async def other_task() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    async def beside_a_task() -> int:
        task = asyncio.create_task(other_task())
        await asyncio.sleep(0)
        start = turns
        await work()
        task.cancel()
        return turns - start

    return asyncio.run(beside_a_task())
