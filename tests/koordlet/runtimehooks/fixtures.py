"""Pods for runtime-hook tests, built the way the states informer would."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

from koordlet.apis.qos import KatalystQoSLevel, KoordQoSClass, PodQoS
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodInfo, Resources, SandboxState, Source
from system.cgroup_layout import QoSTier

TIER_DIR = {QoSTier.BESTEFFORT: "kubepods/besteffort", QoSTier.BURSTABLE: "kubepods/burstable",
            QoSTier.GUARANTEED: "kubepods"}


def ext_spec(**containers: dict[str, Any]) -> str:
    """The extended-resource-spec annotation for {name: {"requests": .., "limits": ..}}."""
    return json.dumps({"containers": containers})


def batch(cpu: str | None, memory: str | None, req_cpu: str | None = None, req_memory: str | None = None) -> dict:
    limits = {k: v for k, v in (("kubernetes.io/batch-cpu", cpu), ("kubernetes.io/batch-memory", memory)) if v}
    requests = {k: v for k, v in (("kubernetes.io/batch-cpu", req_cpu or cpu),
                                  ("kubernetes.io/batch-memory", req_memory or memory)) if v}
    return {"requests": requests, "limits": limits}


def make_pod(uid: str, qos: KoordQoSClass, containers: tuple[str, ...] = ("main",), *,
             annotations: dict[str, str] | None = None, k8s: QoSTier | None = None,
             katalyst: KatalystQoSLevel | None = None, root: str = "",
             specs: dict[str, Resources] | None = None, sources: frozenset[Source] = frozenset({Source.NRI}),
             state: ContainerState = ContainerState.RUNNING) -> PodInfo:
    tier = k8s or {KoordQoSClass.BE: QoSTier.BESTEFFORT, KoordQoSClass.LSR: QoSTier.GUARANTEED,
                   KoordQoSClass.LSE: QoSTier.GUARANTEED}.get(qos, QoSTier.BURSTABLE)
    pod_dir = "/".join(p for p in (root, TIER_DIR[tier], "pod" + uid) if p)
    infos = tuple(
        ContainerInfo(id=f"{uid}-{name}", name=name, pod_uid=uid, state=state,
                      cgroup_dir=f"{pod_dir}/{uid}-{name}", spec=(specs or {}).get(name))
        for name in containers
    )
    return PodInfo(uid=uid, name="pod-" + uid, namespace="default", sandbox_id="sb-" + uid,
                   state=SandboxState.READY, cgroup_parent=pod_dir,
                   qos=PodQoS(effective=qos, koord=qos, katalyst=katalyst, k8s=tier),
                   labels=MappingProxyType({"koordinator.sh/qosClass": qos.value} if qos.value else {}),
                   annotations=MappingProxyType(annotations or {}), containers=infos, sources=sources)
