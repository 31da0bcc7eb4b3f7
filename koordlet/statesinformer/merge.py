"""One pod from what every source says about it. Pure.

Runtime sources (NRI, CRI) say what runs: the sandbox, its cgroup parent, the
containers and their Linux resources. Where both know the same sandbox or
container, NRI's view wins (it comes from events, CRI from a poll). kubelet adds
the API object's facts: priority, QoS tier, current labels/annotations, and
container requests/limits and roles. A pod no runtime source knows does not exist here.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

from koordlet.statesinformer.from_kubelet import KubeletPod
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodInfo, Resources, SandboxState, Source
from koordlet.statesinformer.problems import InputProblem
from koordlet.statesinformer.qos import resolve_qos_checked
from koordlet.statesinformer.runtime_view import SandboxView


def _preference(view: SandboxView) -> tuple[bool, bool, int, str]:
    pod = view.pod
    return (pod.state is SandboxState.READY, Source.NRI in pod.sources, pod.created_at_ns, pod.sandbox_id)


def _spec(kubelet: Resources | None, extended: Resources | None) -> Resources | None:
    if kubelet is None or extended is None:
        return kubelet or extended
    return Resources(
        requests=MappingProxyType({**kubelet.requests, **extended.requests}),
        limits=MappingProxyType({**kubelet.limits, **extended.limits}),
    )


def _containers(
    runtime: Iterable[ContainerInfo], specs: Mapping[str, Resources], kubelet: KubeletPod | None
) -> tuple[ContainerInfo, ...]:
    out: list[ContainerInfo] = []
    for container in runtime:
        if container.state is ContainerState.EXITED:
            continue
        spec = _spec(kubelet.container_specs.get(container.name) if kubelet else None, specs.get(container.name))
        role = kubelet.container_roles.get(container.name, container.role) if kubelet else container.role
        if spec != container.spec or role != container.role:
            container = dataclasses.replace(container, spec=spec, role=role)
        out.append(container)
    out.sort(key=lambda c: (c.name, c.id))
    return tuple(out)


def merge_pod(
    sandboxes: Sequence[SandboxView],
    containers: Iterable[ContainerInfo],
    kubelet: KubeletPod | None = None,
) -> tuple[PodInfo | None, tuple[InputProblem, ...]]:
    """The pod from its sandboxes (any source), its containers (deduplicated by id by
    the caller, NRI's copy preferred) and kubelet's pod; None when no sandbox is known.

    The sandbox chosen is the READY one, NRI's before CRI's, then the newest.
    """
    if not sandboxes:
        return None, ()
    chosen = sandboxes[0] if len(sandboxes) == 1 else max(sandboxes, key=_preference)
    pod = chosen.pod
    sources = pod.sources
    for view in sandboxes:
        if not view.pod.sources <= sources:
            sources = sources | view.pod.sources
    merged = _containers(containers, chosen.container_specs, kubelet)
    if kubelet is None:
        return _rebuilt(pod, merged, sources), chosen.problems
    labels = MappingProxyType({**pod.labels, **kubelet.labels})
    annotations = MappingProxyType({**pod.annotations, **kubelet.annotations})
    tier = kubelet.k8s_qos if kubelet.k8s_qos is not None else pod.cgroup_parent
    qos, qos_problems = resolve_qos_checked(labels, annotations, kubelet.priority, tier)
    return PodInfo(
        uid=pod.uid,
        name=pod.name or kubelet.name,
        namespace=pod.namespace or kubelet.namespace,
        sandbox_id=pod.sandbox_id,
        state=pod.state,
        cgroup_parent=pod.cgroup_parent,
        qos=qos,
        labels=labels,
        annotations=annotations,
        priority=kubelet.priority,
        priority_class_name=kubelet.priority_class_name,
        containers=merged,
        sources=sources | {Source.KUBELET},
        created_at_ns=pod.created_at_ns,
    ), (*chosen.problems, *qos_problems)


def _rebuilt(pod: PodInfo, containers: tuple[ContainerInfo, ...], sources: frozenset[Source]) -> PodInfo:
    """dataclasses.replace(pod, containers=..., sources=...), at a fraction of its cost: this
    runs on every event."""
    return PodInfo(pod.uid, pod.name, pod.namespace, pod.sandbox_id, pod.state, pod.cgroup_parent, pod.qos,
                   pod.labels, pod.annotations, pod.priority, pod.priority_class_name, containers, sources,
                   pod.created_at_ns)
