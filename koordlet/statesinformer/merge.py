"""One pod from what every source says about it. Pure.

Runtime sources (NRI, CRI) say what runs: the sandbox, its cgroup parent, the
containers and their Linux resources. Where both know the same sandbox or
container, NRI's view wins (it comes from events, CRI from a poll). kubelet adds
the API object's facts: priority, QoS tier, current labels/annotations, and
container requests/limits and roles. A pod no runtime source knows does not exist here.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

from koordlet.statesinformer.from_kubelet import KubeletPod
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodInfo, Resources, SandboxState, Source
from koordlet.statesinformer.problems import InputProblem
from koordlet.statesinformer.qos import resolve_qos_checked
from koordlet.statesinformer.runtime_view import SandboxView

_READY, _EXITED, _NRI = SandboxState.READY, ContainerState.EXITED, Source.NRI  # see model.ContainerState


def _preference(view: SandboxView) -> tuple[bool, bool, int, str]:
    pod = view.pod
    return (pod.state is _READY, _NRI in pod.sources, pod.created_at_ns, pod.sandbox_id)


def _spec(kubelet: Resources | None, extended: Resources | None) -> Resources | None:
    if kubelet is None or extended is None:
        return kubelet or extended
    return Resources(
        requests=MappingProxyType({**kubelet.requests, **extended.requests}),
        limits=MappingProxyType({**kubelet.limits, **extended.limits}),
    )


def merged_container(
    container: ContainerInfo, specs: Mapping[str, Resources], kubelet: KubeletPod | None
) -> ContainerInfo | None:
    """A runtime container as the pod shows it (spec and role from kubelet and the chosen
    sandbox's extended-resource-spec); None for one that exited."""
    if container.state is _EXITED:
        return None
    if kubelet is None and not specs and container.spec is None:
        return container  # no kubelet pod, no extended-resource-spec: nothing to add
    spec = _spec(kubelet.container_specs.get(container.name) if kubelet else None, specs.get(container.name))
    role = kubelet.container_roles.get(container.name, container.role) if kubelet else container.role
    # `is` first: a dataclass's == compares field by field even with itself, and nearly always they are the same
    if (spec is not container.spec and spec != container.spec) or (role is not container.role
                                                                   and role != container.role):
        container = container.with_spec(spec, role)
    return container


def container_order(container: ContainerInfo) -> tuple[str, str]:
    """The order of PodInfo.containers."""
    return container.name, container.id


def chosen_sandbox(sandboxes: Sequence[SandboxView]) -> SandboxView:
    """The READY one, NRI's before CRI's, then the newest."""
    return sandboxes[0] if len(sandboxes) == 1 else max(sandboxes, key=_preference)


def _containers(
    runtime: Iterable[ContainerInfo], specs: Mapping[str, Resources], kubelet: KubeletPod | None
) -> tuple[ContainerInfo, ...]:
    out = [merged for container in runtime if (merged := merged_container(container, specs, kubelet)) is not None]
    out.sort(key=container_order)
    return tuple(out)


def merge_pod(
    sandboxes: Sequence[SandboxView],
    containers: Iterable[ContainerInfo],
    kubelet: KubeletPod | None = None,
) -> tuple[PodInfo | None, tuple[InputProblem, ...]]:
    """The pod from its sandboxes (any source), its containers (deduplicated by id by
    the caller, NRI's copy preferred) and kubelet's pod; None when no sandbox is known.

    The sandbox chosen is `chosen_sandbox`'s.
    """
    if not sandboxes:
        return None, ()
    chosen = chosen_sandbox(sandboxes)
    pod = chosen.pod
    sources = pod.sources
    for view in sandboxes:
        if not view.pod.sources <= sources:
            sources = sources | view.pod.sources
    merged = _containers(containers, chosen.container_specs, kubelet)
    if kubelet is None:
        return pod.with_containers(merged, sources), chosen.problems
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
