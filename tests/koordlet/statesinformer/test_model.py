"""PodInfo's derived values: built once per (immutable) pod, renewed by replace()."""

from __future__ import annotations

from dataclasses import replace

from koordlet.apis.qos import KoordQoSClass, PodQoS
from koordlet.statesinformer.model import ContainerInfo, ContainerState, PodInfo, SandboxState


def container(name: str, state: ContainerState) -> ContainerInfo:
    return ContainerInfo(id="id-" + name, name=name, pod_uid="u1", state=state, cgroup_dir="")


def pod(*containers: ContainerInfo) -> PodInfo:
    return PodInfo(uid="u1", name="p", namespace="default", sandbox_id="sb", state=SandboxState.READY,
                   cgroup_parent="kubepods/podu1", qos=PodQoS(KoordQoSClass.LS), containers=containers)


def test_running_containers_are_built_once_and_renewed_by_replace() -> None:
    running, exited = container("a", ContainerState.RUNNING), container("b", ContainerState.EXITED)
    info = pod(running, exited)
    assert info.running_containers == (running,)
    assert info.running_containers is info.running_containers
    started = replace(info, containers=(running, replace(exited, state=ContainerState.RUNNING)))
    assert [c.name for c in started.running_containers] == ["a", "b"]
    assert info.running_containers == (running,)


def test_the_cached_value_is_not_part_of_equality_or_repr() -> None:
    first, second = pod(container("a", ContainerState.RUNNING)), pod(container("a", ContainerState.RUNNING))
    assert first.running_containers
    assert first == second
    assert "_running" not in repr(first)
