"""Small NRI protos for the store tests, with kubelet's cgroupfs layout."""

from __future__ import annotations

from proto.nri.pkg.api.v1alpha1 import api_pb2

TIER_DIRS = {"guaranteed": "kubepods", "burstable": "kubepods/burstable", "besteffort": "kubepods/besteffort"}


def uid_of(n: int) -> str:
    return "00000000-0000-4000-8000-%012d" % n


def sandbox(n: int, tier: str = "burstable", labels: dict[str, str] | None = None,
            annotations: dict[str, str] | None = None, sandbox_id: str | None = None) -> api_pb2.PodSandbox:
    uid = uid_of(n)
    pb = api_pb2.PodSandbox(id=sandbox_id or "sb%d" % n, name="pod-%d" % n, uid=uid, namespace="default",
                            labels=labels or {}, annotations=annotations or {})
    pb.linux.cgroup_parent = "/%s/pod%s" % (TIER_DIRS[tier], uid)
    pb.linux.cgroups_path = "%s/%s" % (pb.linux.cgroup_parent, pb.id)
    return pb


def container(sb: api_pb2.PodSandbox, container_id: str, name: str = "main",
              state: int = api_pb2.CONTAINER_RUNNING, shares: int | None = None) -> api_pb2.Container:
    pb = api_pb2.Container(id=container_id, pod_sandbox_id=sb.id, name=name, state=state)
    pb.linux.cgroups_path = "%s/%s" % (sb.linux.cgroup_parent, container_id)
    if shares is not None:
        pb.linux.resources.cpu.shares.value = shares
    return pb


def container_dir(sb: api_pb2.PodSandbox, container_id: str) -> str:
    return "%s/%s" % (sb.linux.cgroup_parent.lstrip("/"), container_id)
