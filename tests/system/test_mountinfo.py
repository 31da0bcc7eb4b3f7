import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system.errors import InvalidValue
from system.host import Host
from system.mountinfo import CgroupMount, parse_cgroup_mounts, read_cgroup_mounts

HYBRID = (
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n"
    "50 23 0:40 /kubepods /host\\040cg rw - cgroup cgroup rw,memory\n"
)


def test_parses_v1_v2_and_named_hierarchies():
    mounts = parse_cgroup_mounts(HYBRID)
    assert mounts[0] == CgroupMount("/sys/fs/cgroup/cpu,cpuacct", 1,
                                    frozenset({"cpu", "cpuacct"}), "/")
    assert mounts[1].controllers == frozenset({"name=systemd"})
    assert mounts[2] == CgroupMount("/sys/fs/cgroup/unified", 2, frozenset(), "/")
    assert mounts[3].mount_point == "/host cg" and mounts[3].root == "/kubepods"


def test_bad_line_is_invalid():
    with pytest.raises(InvalidValue):
        parse_cgroup_mounts("garbage\n")


def test_this_process_sees_cgroup_mounts():
    mounts = read_cgroup_mounts(Host())
    assert any(m.mount_point.startswith("/sys/fs/cgroup") for m in mounts)


def test_unreadable_mountinfo_is_empty(tmp_path):
    assert read_cgroup_mounts(Host.under(tmp_path)) == ()


@settings(max_examples=100)
@given(st.text("abc /\\\t", min_size=1, max_size=20),
       st.frozensets(st.sampled_from(["cpu", "cpuacct", "memory", "pids"]), min_size=1))
def test_mount_point_escapes_round_trip(point, controllers):
    escaped = "".join("\\%03o" % ord(c) if c in " \t\n\\" else c for c in point)
    line = "1 2 0:1 / %s rw - cgroup cgroup rw,%s\n" % (escaped, ",".join(sorted(controllers)))
    (mount,) = parse_cgroup_mounts(line)
    assert mount.mount_point == point and mount.controllers == controllers


def test_detection_uses_mountinfo_for_oddly_named_mounts(tmp_path):
    from system.cgroup_version import detect_hierarchy
    from tests.system.fake_trees import build_v1_tree, write_file

    host = build_v1_tree(tmp_path, controllers=("memory",))
    odd = host.cgroup("acct_and_cpu")
    write_file(odd / "cpu.shares", "1024")
    write_file(odd / "cpuacct.usage", "0")
    write_file(host.proc("self", "mountinfo"),
               "32 31 0:29 / %s rw - cgroup cgroup rw,cpu,cpuacct\n" % odd)
    hierarchy = detect_hierarchy(host)
    assert hierarchy.controller_root("cpu") == odd
    assert hierarchy.controller_root("cpuacct") == odd
    assert hierarchy.controller_root("memory") == host.cgroup("memory")
