"""Pods on fake cgroup trees for the collector tests."""

from __future__ import annotations

import asyncio
from pathlib import Path

from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.framework import CollectContext
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import (
    ContainerInfo,
    ContainerState,
    NodeInfo,
    PodInfo,
    Resources,
    SandboxState,
)
from koordlet.util.host_facts import HostFacts
from system.cgroup_readers import CgroupReader
from system.host import Host
from system.usage_reader import UsageReader
from tests.system.fake_trees import add_cgroup, build_hybrid_tree, build_proc_tree


def make_pod(uid: str, qos: KoordQoSClass = KoordQoSClass.LS, tier: str = "burstable",
             containers: int = 1, batch_cpu_milli: int = 0) -> PodInfo:
    parent = "kubepods/%s/pod%s" % (tier, uid)
    spec = Resources(requests={"kubernetes.io/batch-cpu": batch_cpu_milli}) if batch_cpu_milli else None
    ctrs = tuple(ContainerInfo("c%d-%s" % (i, uid), "app%d" % i, uid, ContainerState.RUNNING,
                               "%s/c%d-%s" % (parent, i, uid), spec=spec) for i in range(containers))
    return PodInfo(uid, "pod-" + uid, "default", "sb-" + uid, SandboxState.READY, parent,
                   PodQoS(qos, koord=qos), containers=ctrs)


def fake_node(root: Path, pods: list[PodInfo]) -> tuple[Host, StaticStates]:
    """A hybrid host (v1 controllers + unified/) with a fake /proc and the pods' cgroups."""
    host = build_hybrid_tree(root)
    build_proc_tree(root)
    for tier in ("", "/burstable", "/besteffort"):
        add_cgroup(host, "kubepods" + tier)
    for pod in pods:
        add_cgroup(host, pod.cgroup_parent)
        for container in pod.containers:
            add_cgroup(host, container.cgroup_dir)
    return host, StaticStates(NodeInfo("node-a"), pods)


def context(host: Host, states: StaticStates | None, store: MetricStore | None = None) -> CollectContext:
    facts = HostFacts(host)
    files = facts.files
    return CollectContext(host, store or MetricStore(), "node-a", files, CgroupReader(files, keep_open=False), states,
                          UsageReader(files, keep_open=False), facts=facts)


async def mark_other_turns(log: list) -> None:
    """Another task on the loop: at each of its turns it logs "other" after whatever else was
    logged last, so the log shows where the loop ran someone else."""
    while True:
        if log and log[-1] != "other":
            log.append("other")
        await asyncio.sleep(0)
