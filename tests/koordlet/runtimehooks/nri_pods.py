"""NRI pods and containers shaped like containerd 2.3.4's (protocols.md §3.9): the
container's linux.resources hold what kubelet asked for."""

from __future__ import annotations

from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

TIERS = {"BE": "kubepods/besteffort", "LS": "kubepods/burstable", "LSR": "kubepods", "LSE": "kubepods"}


def nri_pod(uid: str, qos: str, annotations: dict[str, str] | None = None, root: str = "") -> api.PodSandbox:
    pod = api.PodSandbox(id="sb" + uid.ljust(62, "0"), name="pod-" + uid, uid=uid, namespace="default",
                         labels={"koordinator.sh/qosClass": qos}, annotations=annotations or {})
    # cgroupfs spelling, as containerd reports it: an absolute path
    pod.linux.cgroup_parent = "/" + "/".join(p for p in (root, TIERS[qos], "pod" + uid) if p)
    return pod


def nri_container(pod: api.PodSandbox, name: str, shares: int = 2, quota: int | None = None,
                  memory: int | None = None) -> api.Container:
    ctr = api.Container(id=(pod.uid + name).ljust(64, "0"), pod_sandbox_id=pod.id, name=name)
    ctr.linux.cgroups_path = pod.linux.cgroup_parent + "/" + ctr.id
    ctr.linux.resources.cpu.shares.value = shares
    ctr.linux.resources.cpu.period.value = 100000
    if quota is not None:
        ctr.linux.resources.cpu.quota.value = quota
    if memory is not None:
        ctr.linux.resources.memory.limit.value = memory
    return ctr
