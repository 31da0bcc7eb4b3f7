"""Our CRI proto against k8s.io/cri-api pkg/apis/runtime/v1/api.proto (kubernetes/cri-api
791729b, 2026-07): service and method names, and every field we kept by name and number."""

from __future__ import annotations

import pytest

from proto.cri import api_pb2

# (message, field) -> number, as upstream declares them
UPSTREAM_FIELDS = {
    "VersionRequest": {"version": 1},
    "VersionResponse": {"version": 1, "runtime_name": 2, "runtime_version": 3, "runtime_api_version": 4},
    "PodSandboxMetadata": {"name": 1, "uid": 2, "namespace": 3, "attempt": 4},
    "PodSandboxStateValue": {"state": 1},
    "PodSandboxFilter": {"id": 1, "state": 2, "label_selector": 3},
    "ListPodSandboxRequest": {"filter": 1},
    "PodSandbox": {"id": 1, "metadata": 2, "state": 3, "created_at": 4, "labels": 5, "annotations": 6,
                   "runtime_handler": 7},
    "ListPodSandboxResponse": {"items": 1},
    "PodSandboxStatusRequest": {"pod_sandbox_id": 1, "verbose": 2},
    "PodSandboxStatus": {"id": 1, "metadata": 2, "state": 3, "created_at": 4, "labels": 7, "annotations": 8,
                         "runtime_handler": 9},
    "PodSandboxStatusResponse": {"status": 1, "info": 2, "timestamp": 4},
    "ContainerMetadata": {"name": 1, "attempt": 2},
    "ImageSpec": {"image": 1, "annotations": 2, "user_specified_image": 18, "runtime_handler": 19,
                  "image_ref": 20},
    "ContainerStateValue": {"state": 1},
    "ContainerFilter": {"id": 1, "state": 2, "pod_sandbox_id": 3, "label_selector": 4},
    "ListContainersRequest": {"filter": 1},
    "Container": {"id": 1, "pod_sandbox_id": 2, "metadata": 3, "image": 4, "image_ref": 5, "state": 6,
                  "created_at": 7, "labels": 8, "annotations": 9, "image_id": 10},
    "ListContainersResponse": {"containers": 1},
    "ContainerStatusRequest": {"container_id": 1, "verbose": 2},
    "HugepageLimit": {"page_size": 1, "limit": 2},
    "LinuxContainerResources": {"cpu_period": 1, "cpu_quota": 2, "cpu_shares": 3, "memory_limit_in_bytes": 4,
                                "oom_score_adj": 5, "cpuset_cpus": 6, "cpuset_mems": 7, "hugepage_limits": 8,
                                "unified": 9, "memory_swap_limit_in_bytes": 10},
    "ContainerResources": {"linux": 1},
    "ContainerStatus": {"id": 1, "metadata": 2, "state": 3, "created_at": 4, "started_at": 5, "finished_at": 6,
                        "exit_code": 7, "image": 8, "image_ref": 9, "reason": 10, "message": 11, "labels": 12,
                        "annotations": 13, "log_path": 15, "resources": 16, "image_id": 17},
    "ContainerStatusResponse": {"status": 1, "info": 2},
    "StopContainerRequest": {"container_id": 1, "timeout": 2},
    "StopContainerResponse": {},
    # the lifecycle calls bench.cri_create makes
    "NamespaceOption": {"network": 1, "pid": 2, "ipc": 3},
    "LinuxSandboxSecurityContext": {"namespace_options": 1, "privileged": 6},
    "LinuxPodSandboxConfig": {"cgroup_parent": 1, "security_context": 2, "resources": 5},
    "PodSandboxConfig": {"metadata": 1, "hostname": 2, "log_directory": 3, "labels": 6, "annotations": 7,
                         "linux": 8},
    "RunPodSandboxRequest": {"config": 1, "runtime_handler": 2},
    "RunPodSandboxResponse": {"pod_sandbox_id": 1},
    "StopPodSandboxRequest": {"pod_sandbox_id": 1},
    "StopPodSandboxResponse": {},
    "RemovePodSandboxRequest": {"pod_sandbox_id": 1},
    "RemovePodSandboxResponse": {},
    "LinuxContainerSecurityContext": {"namespace_options": 3},
    "LinuxContainerConfig": {"resources": 1, "security_context": 2},
    "ContainerConfig": {"metadata": 1, "image": 2, "command": 3, "args": 4, "labels": 9, "annotations": 10,
                        "log_path": 11, "linux": 15},
    "CreateContainerRequest": {"pod_sandbox_id": 1, "config": 2, "sandbox_config": 3},
    "CreateContainerResponse": {"container_id": 1},
    "StartContainerRequest": {"container_id": 1},
    "StartContainerResponse": {},
    "RemoveContainerRequest": {"container_id": 1},
    "RemoveContainerResponse": {},
}


@pytest.mark.parametrize("message", sorted(UPSTREAM_FIELDS))
def test_fields_have_upstream_names_and_numbers(message: str) -> None:
    descriptor = api_pb2.DESCRIPTOR.message_types_by_name[message]
    assert {f.name: f.number for f in descriptor.fields} == UPSTREAM_FIELDS[message]


def test_enums_have_upstream_values() -> None:
    assert dict(api_pb2.PodSandboxState.items()) == {"SANDBOX_READY": 0, "SANDBOX_NOTREADY": 1}
    assert dict(api_pb2.ContainerState.items()) == {
        "CONTAINER_CREATED": 0, "CONTAINER_RUNNING": 1, "CONTAINER_EXITED": 2, "CONTAINER_UNKNOWN": 3}
    assert dict(api_pb2.NamespaceMode.items()) == {"POD": 0, "CONTAINER": 1, "NODE": 2, "TARGET": 3}


def test_service_is_runtime_v1_runtimeservice() -> None:
    service = api_pb2.DESCRIPTOR.services_by_name["RuntimeService"]
    assert service.full_name == "runtime.v1.RuntimeService"
    assert {m.name: (m.input_type.name, m.output_type.name) for m in service.methods} == {
        "Version": ("VersionRequest", "VersionResponse"),
        "PodSandboxStatus": ("PodSandboxStatusRequest", "PodSandboxStatusResponse"),
        "ListPodSandbox": ("ListPodSandboxRequest", "ListPodSandboxResponse"),
        "StopContainer": ("StopContainerRequest", "StopContainerResponse"),
        "ListContainers": ("ListContainersRequest", "ListContainersResponse"),
        "ContainerStatus": ("ContainerStatusRequest", "ContainerStatusResponse"),
        "RunPodSandbox": ("RunPodSandboxRequest", "RunPodSandboxResponse"),
        "StopPodSandbox": ("StopPodSandboxRequest", "StopPodSandboxResponse"),
        "RemovePodSandbox": ("RemovePodSandboxRequest", "RemovePodSandboxResponse"),
        "CreateContainer": ("CreateContainerRequest", "CreateContainerResponse"),
        "StartContainer": ("StartContainerRequest", "StartContainerResponse"),
        "RemoveContainer": ("RemoveContainerRequest", "RemoveContainerResponse"),
    }


def test_fields_we_left_out_survive_a_decode_as_unknown_fields() -> None:
    # a runtime's PodSandboxStatus with network (5) set: field 5, wire type 2, a 3-byte message
    wire = api_pb2.PodSandboxStatus(id="sb").SerializeToString() + b"\x2a\x03\x0a\x01\x31"
    status = api_pb2.PodSandboxStatus.FromString(wire)
    assert status.id == "sb"
    assert status.SerializeToString() == wire
