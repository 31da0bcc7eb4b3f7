"""NRI protos -> PodInfo / ContainerInfo, on the frames a real containerd 2.3.4 sent."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.apis.qos import KoordQoSClass
from koordlet.statesinformer.extended_spec import ANNOTATION_EXTENDED_RESOURCE_SPEC
from koordlet.statesinformer.from_nri import (
    container_info,
    container_state,
    deterministic_bytes,
    linux_resources,
    sandbox_view,
)
from koordlet.statesinformer.model import ContainerState, LinuxResources, Resources, SandboxState, Source
from koordlet.statesinformer.runtime_view import checked_cgroup_dir
from proto.nri.pkg.api.v1alpha1 import api_pb2
from system.cgroup_layout import CgroupDriver, QoSTier, container_dir, pod_dir
from system.errors import InvalidValue
from system.runtime_cgroup_path import cgroup_dir
from tests.koordlet.statesinformer.nri_capture import first

PRE_UID = "b6a55975-c650-465b-b4cc-f6bc6f380edf"
PRE_SANDBOX = "b5015ccf4e694c64abc2fc177883315d56e7883d765ba3f0536c1d3691cd2c8c"
OLD_ID = "0d895407f96aa5d736f2530a27cc088200e960fadc09811df7acc13dbcd44d42"


def test_synchronize_from_containerd_converts_to_the_kubelet_cgroup_dirs() -> None:
    sync = first("Synchronize")
    (sandbox,) = sync.pods
    view = sandbox_view(sandbox)
    pod = view.pod
    assert (pod.uid, pod.name, pod.namespace, pod.sandbox_id) == (PRE_UID, "pre-existing", "default", PRE_SANDBOX)
    assert pod.state is SandboxState.READY and pod.sources == {Source.NRI}
    # kubelet's cgroupfs layout, computed independently by system.cgroup_layout
    assert pod.cgroup_parent == pod_dir(CgroupDriver.CGROUPFS, QoSTier.BURSTABLE, PRE_UID)
    # the capture's pod carries koordinator.sh/qosClass=LS as an annotation
    assert pod.qos.effective is KoordQoSClass.LS and pod.qos.koord is KoordQoSClass.LS
    assert pod.qos.k8s is QoSTier.BURSTABLE
    assert view.problems == ()

    (container,) = [c for c in sync.containers if c.name == "old"]
    info, problems = container_info(container, pod.uid)
    assert problems == ()
    assert info.id == OLD_ID and info.pod_uid == PRE_UID
    assert info.state is ContainerState.RUNNING
    assert info.cgroup_dir == container_dir(CgroupDriver.CGROUPFS, QoSTier.BURSTABLE, PRE_UID, OLD_ID)
    assert info.pid == 626
    # what kubelet asked for: 64 MiB limit, 0.5 CPU request (512 shares), 0.5 CPU limit
    assert info.linux.memory_limit == 64 * 1024 * 1024
    assert (info.linux.cpu_shares, info.linux.cpu_quota, info.linux.cpu_period) == (512, 50000, 100000)


def test_create_container_from_containerd_has_its_cgroup_dir_before_it_exists() -> None:
    request = first("CreateContainer")
    view = sandbox_view(request.pod)
    info, _ = container_info(request.container, view.pod.uid)
    assert info.cgroup_dir == container_dir(
        CgroupDriver.CGROUPFS, QoSTier.BURSTABLE, view.pod.uid, request.container.id)
    assert info.name == "main"


def _sandbox(parent: str, path: str, annotations: dict[str, str] | None = None) -> api_pb2.PodSandbox:
    sandbox = api_pb2.PodSandbox(id="sb1", name="p", uid="11111111-2222-3333-4444-555555555555",
                                 namespace="ns", annotations=annotations or {})
    sandbox.linux.cgroup_parent = parent
    sandbox.linux.cgroups_path = path
    return sandbox


SD_UID = "11111111_2222_3333_4444_555555555555"
UID = "11111111-2222-3333-4444-555555555555"


@pytest.mark.parametrize(("parent", "tier"), [
    ("kubepods-besteffort-pod%s.slice" % SD_UID, QoSTier.BESTEFFORT),
    ("kubepods-burstable-pod%s.slice" % SD_UID, QoSTier.BURSTABLE),
    ("kubepods-pod%s.slice" % SD_UID, QoSTier.GUARANTEED),
])
def test_systemd_driver_slices_become_real_directories(parent: str, tier: QoSTier) -> None:
    view = sandbox_view(_sandbox(parent, parent + ":cri-containerd:sb1"))
    assert view.pod.cgroup_parent == pod_dir(CgroupDriver.SYSTEMD, tier, UID)
    assert view.pod.qos.k8s is {QoSTier.BESTEFFORT: QoSTier.BESTEFFORT, QoSTier.BURSTABLE: QoSTier.BURSTABLE,
                                QoSTier.GUARANTEED: QoSTier.GUARANTEED}[tier]
    container = api_pb2.Container(id="abc123", pod_sandbox_id="sb1", name="c", state=api_pb2.CONTAINER_CREATED)
    container.linux.cgroups_path = parent + ":cri-containerd:abc123"
    info, problems = container_info(container, UID)
    assert problems == ()
    assert info.cgroup_dir == container_dir(CgroupDriver.SYSTEMD, tier, UID, "abc123")


def test_an_unreadable_cgroup_parent_is_a_problem_not_a_failure() -> None:
    view = sandbox_view(_sandbox("weird:path", ""))
    assert view.pod.cgroup_parent == ""
    assert [p.key for p in view.problems] == ["linux.cgroup_parent"]
    assert view.pod.qos.effective is KoordQoSClass.LS


def test_extended_resource_spec_annotation_becomes_per_container_specs() -> None:
    spec = {"containers": {"main": {"requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "1Gi"},
                                    "limits": {"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "2Gi"}}}}
    view = sandbox_view(_sandbox("/kubepods/besteffort/pod" + UID, "",
                                 {ANNOTATION_EXTENDED_RESOURCE_SPEC: json.dumps(spec)}))
    assert view.problems == ()
    assert view.container_specs["main"] == Resources(
        requests={"kubernetes.io/batch-cpu": 500, "kubernetes.io/batch-memory": 1 << 30},
        limits={"kubernetes.io/batch-cpu": 1000, "kubernetes.io/batch-memory": 2 << 30},
    )


def test_pods_with_equal_extended_resource_specs_share_one_parse() -> None:
    spec = {"containers": {"main": {"requests": {"kubernetes.io/batch-cpu": "500"}}}}
    first, second = (sandbox_view(_sandbox("/kubepods/besteffort/pod" + uid, "",
                                           {ANNOTATION_EXTENDED_RESOURCE_SPEC: json.dumps(spec)}))
                     for uid in (UID, PRE_UID))  # equal texts, two string objects
    assert first.container_specs is second.container_specs
    assert first.container_specs["main"].requests == {"kubernetes.io/batch-cpu": 500}


@pytest.mark.parametrize("text", [
    "{", "[]", '{"containers": []}', '{"containers": {"main": {"requests": {"cpu": "lots"}}}}',
    '{"containers": {"main": {"limits": {"memory": true}}}}', '{"containers": {"main": 3}}',
])
def test_bad_extended_resource_spec_is_reported_and_ignored(text: str) -> None:
    for _ in range(2):  # an invalid text is not kept: reported at every parse
        view = sandbox_view(_sandbox("/kubepods/besteffort/pod" + UID, "", {ANNOTATION_EXTENDED_RESOURCE_SPEC: text}))
        assert dict(view.container_specs) == {}
        assert [p.key for p in view.problems] == [ANNOTATION_EXTENDED_RESOURCE_SPEC]


def test_unset_optionals_stay_none_and_set_ones_keep_their_value() -> None:
    resources = api_pb2.LinuxResources()
    assert linux_resources(resources) == LinuxResources()
    resources.cpu.shares.value = 2
    resources.cpu.quota.value = -1
    resources.cpu.cpus = "0-3"
    resources.memory.limit.value = 0
    resources.unified["memory.high"] = "max"
    assert linux_resources(resources) == LinuxResources(
        cpu_shares=2, cpu_quota=-1, cpuset_cpus="0-3", memory_limit=0, unified={"memory.high": "max"})


@pytest.mark.parametrize(("state", "expected"), [
    (api_pb2.CONTAINER_UNKNOWN, ContainerState.UNKNOWN), (api_pb2.CONTAINER_CREATED, ContainerState.CREATED),
    (api_pb2.CONTAINER_PAUSED, ContainerState.RUNNING), (api_pb2.CONTAINER_RUNNING, ContainerState.RUNNING),
    (api_pb2.CONTAINER_STOPPED, ContainerState.EXITED), (99, ContainerState.UNKNOWN),
])
def test_container_states(state: int, expected: ContainerState) -> None:
    assert container_state(state) is expected


def test_equal_resources_without_unified_share_one_value_and_the_sharing_is_bounded() -> None:
    from koordlet.statesinformer import model

    def ask(shares: int) -> api_pb2.LinuxResources:
        resources = api_pb2.LinuxResources()
        resources.cpu.shares.value = shares
        return resources

    assert linux_resources(ask(7)) is linux_resources(ask(7))
    assert linux_resources(ask(7)) != linux_resources(ask(8))
    with_unified = ask(7)
    with_unified.unified["memory.high"] = "max"
    assert linux_resources(with_unified) == LinuxResources(cpu_shares=7, unified={"memory.high": "max"})
    for shares in range(model._SHARED_LINUX_MAX + 10):
        assert linux_resources(ask(shares)).cpu_shares == shares
    assert model.shared_linux_resources.cache_info().currsize <= model._SHARED_LINUX_MAX


def test_resources_kept_by_message_follow_every_field_and_the_keeping_is_bounded() -> None:
    from koordlet.statesinformer import from_nri

    base = api_pb2.LinuxResources()
    base.cpu.shares.value, base.cpu.quota.value, base.cpu.period.value = 512, 50000, 100000
    base.cpu.cpus, base.cpu.mems, base.memory.limit.value = "0-3", "0", 1 << 30
    base.unified["memory.high"] = "max"
    expected = LinuxResources(512, 50000, 100000, "0-3", "0", 1 << 30, {"memory.high": "max"})
    assert linux_resources(base) == expected
    changes = {
        "cpu_shares": lambda r: setattr(r.cpu.shares, "value", 513),
        "cpu_quota": lambda r: setattr(r.cpu.quota, "value", 60000),
        "cpu_period": lambda r: setattr(r.cpu.period, "value", 50000),
        "cpuset_cpus": lambda r: setattr(r.cpu, "cpus", "0-1"),
        "cpuset_mems": lambda r: setattr(r.cpu, "mems", "1"),
        "memory_limit": lambda r: setattr(r.memory.limit, "value", 1 << 29),
        "unified": lambda r: r.unified.__setitem__("memory.high", "1G"),
    }
    for field, change in changes.items():
        changed = api_pb2.LinuxResources()
        changed.CopyFrom(base)
        change(changed)
        converted = linux_resources(changed)
        assert converted != expected and getattr(converted, field) != getattr(expected, field), field
        assert linux_resources(base) == expected  # the earlier message still reads as it did
    # the same unified map filled in another order is the same ask
    one, other = api_pb2.LinuxResources(), api_pb2.LinuxResources()
    for key in ("a", "b", "c", "d", "e", "f"):
        one.unified[key] = key
    for key in ("f", "e", "d", "c", "b", "a"):
        other.unified[key] = key
    assert linux_resources(one) is linux_resources(other)
    for shares in range(from_nri._LINUX_BY_MESSAGE_MAX + 10):
        resources = api_pb2.LinuxResources()
        resources.cpu.shares.value = shares
        assert linux_resources(resources).cpu_shares == shares
    assert len(from_nri._linux_by_message) <= from_nri._LINUX_BY_MESSAGE_MAX


def test_the_deterministic_bytes_are_protobufs_deterministic_serialization() -> None:
    sandbox = first("Synchronize").pods[0]
    assert deterministic_bytes(sandbox) == sandbox.SerializeToString(deterministic=True)
    keys = ["key-%d" % n for n in range(40)]
    orders = [keys, keys[::-1], keys[1::2] + keys[::2]]
    filled = [api_pb2.PodSandbox(labels={key: key for key in order}) for order in orders]
    assert len({pb.SerializeToString() for pb in filled}) > 1  # upb's own order follows the filling
    assert {deterministic_bytes(pb) for pb in filled} == {filled[0].SerializeToString(deterministic=True)}


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="/.:ab-", max_size=12))
def test_the_plain_cgroupfs_shortcut_reads_paths_as_cgroup_dir_does(value: str) -> None:
    try:
        expected, invalid = cgroup_dir(value), False
    except InvalidValue:
        expected, invalid = "", True
    problems: list = []
    assert checked_cgroup_dir(value, "key", problems) == expected
    assert bool(problems) == invalid
