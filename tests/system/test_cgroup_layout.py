import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system.cgroup_driver import detect_host_driver
from system.cgroup_files import CgroupFiles
from system.cgroup_layout import (
    CgroupDriver,
    CgroupPathInfo,
    QoSTier,
    Runtime,
    container_dir,
    driver_from_names,
    parse_cgroup_path,
    pod_dir,
    qos_dir,
)
from system.errors import InvalidValue
from tests.system.fake_trees import add_cgroup, build_v1_tree, build_v2_tree

UID = "0a1b2c3d-1111-2222-3333-444455556666"
CID = "4f5e" * 16

C, S = CgroupDriver.CGROUPFS, CgroupDriver.SYSTEMD
G, B, BE = QoSTier.GUARANTEED, QoSTier.BURSTABLE, QoSTier.BESTEFFORT


@pytest.mark.parametrize(
    "driver, tier, expected",
    [
        (C, G, "kubepods/pod" + UID),
        (C, B, "kubepods/burstable/pod" + UID),
        (C, BE, "kubepods/besteffort/pod" + UID),
        (S, G, "kubepods.slice/kubepods-pod0a1b2c3d_1111_2222_3333_444455556666.slice"),
        (S, B, "kubepods.slice/kubepods-burstable.slice/"
               "kubepods-burstable-pod0a1b2c3d_1111_2222_3333_444455556666.slice"),
        (S, BE, "kubepods.slice/kubepods-besteffort.slice/"
                "kubepods-besteffort-pod0a1b2c3d_1111_2222_3333_444455556666.slice"),
    ],
)
def test_pod_dir_follows_kubelet_naming(driver, tier, expected):
    assert pod_dir(driver, tier, UID) == expected


def test_qos_dirs():
    assert qos_dir(C, B) == "kubepods/burstable"
    assert qos_dir(S, BE) == "kubepods.slice/kubepods-besteffort.slice"
    assert qos_dir(S, G) == "kubepods.slice"


@pytest.mark.parametrize(
    "runtime, leaf_systemd, leaf_cgroupfs",
    [
        (Runtime.CONTAINERD, "cri-containerd-%s.scope" % CID, CID),
        (Runtime.DOCKER, "docker-%s.scope" % CID, CID),
        (Runtime.CRIO, "crio-%s.scope" % CID, "crio-" + CID),
    ],
)
def test_container_dir_per_runtime(runtime, leaf_systemd, leaf_cgroupfs):
    assert container_dir(S, B, UID, CID, runtime).endswith("/" + leaf_systemd)
    assert container_dir(C, B, UID, CID, runtime.value) == "kubepods/burstable/pod%s/%s" % (
        UID, leaf_cgroupfs)


def test_parse_reads_back_full_mount_and_proc_paths():
    info = parse_cgroup_path("/sys/fs/cgroup/cpu/" + container_dir(S, BE, UID, CID))
    assert info == CgroupPathInfo(S, BE, UID, CID, Runtime.CONTAINERD)
    assert parse_cgroup_path("/kubepods/pod" + UID) == CgroupPathInfo(C, G, UID)
    assert parse_cgroup_path("kubepods/burstable") == CgroupPathInfo(C, B)
    assert parse_cgroup_path("kubepods.slice") == CgroupPathInfo(S)


@pytest.mark.parametrize(
    "path",
    ["system.slice/foo.service", "kubepods/burstable/notapod", "kubepods/pod" + UID + "/a/b",
     "kubepods.slice/kubepods-burstable.slice/other.slice",
     "kubepods.slice/kubepods-pod%s.slice/weird-%s.scope" % ("x", CID)],
)
def test_parse_refuses_foreign_paths(path):
    with pytest.raises(InvalidValue):
        parse_cgroup_path(path)


@pytest.mark.parametrize("uid, cid", [("../x", CID), (UID, "a/b"), ("", CID), (UID, "")])
def test_layout_refuses_unsafe_names(uid, cid):
    with pytest.raises(InvalidValue):
        container_dir(C, B, uid, cid)


_uid = st.uuids().map(str)
_cid = st.text("0123456789abcdef", min_size=1, max_size=64)


@settings(max_examples=200)
@given(st.sampled_from(list(CgroupDriver)), st.sampled_from(list(QoSTier)), _uid, _cid,
       st.sampled_from(list(Runtime)))
def test_layout_round_trip(driver, tier, uid, cid, runtime):
    info = parse_cgroup_path(container_dir(driver, tier, uid, cid, runtime))
    assert (info.driver, info.tier, info.pod_uid, info.container_id) == (driver, tier, uid, cid)
    if driver is S or runtime is Runtime.CRIO:
        assert info.runtime is runtime
    assert parse_cgroup_path(pod_dir(driver, tier, uid)) == CgroupPathInfo(driver, tier, uid)


def test_driver_from_names():
    assert driver_from_names({"kubepods.slice", "system.slice"}) is S
    assert driver_from_names({"kubepods"}) is C
    assert driver_from_names(set()) is None


def test_detect_host_driver_on_fake_trees(tmp_path):
    v1 = build_v1_tree(tmp_path / "v1")
    add_cgroup(v1, "kubepods.slice")
    assert detect_host_driver(CgroupFiles(v1)) is S
    v2 = build_v2_tree(tmp_path / "v2")
    assert detect_host_driver(CgroupFiles(v2)) is None
    add_cgroup(v2, "kubepods")
    assert detect_host_driver(CgroupFiles(v2)) is C
