"""Runtime cgroup parent / cgroups path spellings -> directories, both drivers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from system.cgroup_layout import CgroupDriver, QoSTier, container_dir, parse_cgroup_path, pod_dir
from system.errors import InvalidValue
from system.runtime_cgroup_path import cgroup_dir, expand_slice

UID = "0a1b2c3d-0000-4000-8000-00000000abcd"
SD = UID.replace("-", "_")
CID = "d38a456b71723bc55e48cd94fe16dd776ed1b6d3bc0dba691297c95dd762e97a"


@pytest.mark.parametrize(("value", "expected"), [
    ("", ""),
    ("/kubepods/burstable/pod" + UID, pod_dir(CgroupDriver.CGROUPFS, QoSTier.BURSTABLE, UID)),
    ("/kubepods/pod%s/%s" % (UID, CID), container_dir(CgroupDriver.CGROUPFS, QoSTier.GUARANTEED, UID, CID)),
    ("kubepods-besteffort-pod%s.slice" % SD, pod_dir(CgroupDriver.SYSTEMD, QoSTier.BESTEFFORT, UID)),
    ("kubepods-pod%s.slice" % SD, pod_dir(CgroupDriver.SYSTEMD, QoSTier.GUARANTEED, UID)),
    ("kubepods-burstable-pod%s.slice:cri-containerd:%s" % (SD, CID),
     container_dir(CgroupDriver.SYSTEMD, QoSTier.BURSTABLE, UID, CID)),
    ("kubepods-besteffort-pod%s.slice:crio:%s" % (SD, CID),
     container_dir(CgroupDriver.SYSTEMD, QoSTier.BESTEFFORT, UID, CID, "crio")),
    ("kubepods.slice", "kubepods.slice"),
    ("-.slice", ""),
    (":cri-containerd:abc", "system.slice/cri-containerd-abc.scope"),
    ("a-b.slice::svc", "a.slice/a-b.slice/svc.scope"),
])
def test_cgroup_dir(value: str, expected: str) -> None:
    assert cgroup_dir(value) == expected


@pytest.mark.parametrize("value", [
    "kubepods/burstable", "a:b", "a:b:c:d", "x.slice:p:", "a--b.slice", "-a.slice", "/kubepods/../etc",
    "relative/path.scope", "a.slice/b.slice",
])
def test_what_no_driver_writes_is_rejected(value: str) -> None:
    with pytest.raises(InvalidValue):
        cgroup_dir(value)


@given(st.sampled_from(list(QoSTier)), st.uuids(), st.text("0123456789abcdef", min_size=8, max_size=64))
def test_systemd_triples_agree_with_the_kubelet_layout(tier: QoSTier, uid, cid: str) -> None:
    pod = pod_dir(CgroupDriver.SYSTEMD, tier, str(uid))
    slice_name = pod.rsplit("/", 1)[1]
    directory = cgroup_dir("%s:cri-containerd:%s" % (slice_name, cid))
    assert directory == container_dir(CgroupDriver.SYSTEMD, tier, str(uid), cid)
    info = parse_cgroup_path(directory)
    assert (info.tier, info.pod_uid, info.container_id) == (tier, str(uid), cid)


def test_expand_slice_nests_by_dashes() -> None:
    assert expand_slice("a-b-c.slice") == "a.slice/a-b.slice/a-b-c.slice"
