import os

import pytest

from system.cgroup_codecs import shares_to_weight
from system.cgroup_files import CgroupFiles, clean_cgroup_dir
from system.cgroup_resource import REGISTRY
from system.cgroup_version import CgroupMode, detect_hierarchy
from system.errors import Gone, InvalidValue, NotSupported
from tests.system.door import write_raw, write_value
from tests.system.fake_trees import add_cgroup, build_hybrid_tree, build_v1_tree, build_v2_tree

POD = "kubepods/burstable/pod1234"


@pytest.fixture
def v1(tmp_path):
    host = build_v1_tree(tmp_path)
    add_cgroup(host, "kubepods")
    add_cgroup(host, "kubepods/burstable")
    add_cgroup(host, POD)
    return CgroupFiles(host)


@pytest.fixture
def v2(tmp_path):
    host = build_v2_tree(tmp_path)
    add_cgroup(host, "kubepods")
    add_cgroup(host, "kubepods/burstable")
    add_cgroup(host, POD)
    return CgroupFiles(host)


@pytest.fixture
def hybrid(tmp_path):
    host = build_hybrid_tree(tmp_path)
    add_cgroup(host, "kubepods")
    add_cgroup(host, POD)
    return CgroupFiles(host)


def test_v1_paths_use_the_subsystem_dir(v1):
    root = v1.host.cgroup_root
    assert v1.path("cpu.shares", POD) == root / "cpu" / POD / "cpu.shares"
    assert v1.path("cpuacct.usage", "") == root / "cpuacct" / "cpuacct.usage"
    assert v1.path("cpuset.cpus.effective", POD) == root / "cpuset" / POD / "cpuset.effective_cpus"


def test_v2_paths_use_the_unified_root(v2):
    root = v2.host.cgroup_root
    assert v2.path("cpu.shares", POD) == root / POD / "cpu.weight"
    assert v2.path("cpu.cfs_quota_us", POD) == root / POD / "cpu.max"
    assert v2.path("memory.limit_in_bytes", "/" + POD + "/") == root / POD / "memory.max"


def test_hybrid_reads_pressure_from_unified_and_the_rest_from_v1(hybrid):
    root = hybrid.host.cgroup_root
    assert hybrid.path("cpu.pressure", POD) == root / "unified" / POD / "cpu.pressure"
    assert hybrid.path("cpu.stat", POD) == root / "cpu" / POD / "cpu.stat"
    assert hybrid.version_for("cpu.shares") == 1


def test_v1_only_resource_is_not_supported_on_v2(v2):
    with pytest.raises(NotSupported):
        v2.path("net_cls.classid", POD)
    assert not v2.supported("memory.soft_limit_in_bytes", POD)


def test_supported_checks_optional_files(v1, v2):
    assert v1.supported("cpu.shares")
    assert not v1.supported("cpu.bvt_warp_ns", "kubepods")
    assert not v1.supported("memory.min", "kubepods")
    assert v2.supported("memory.min", "kubepods")
    assert v2.supported("cpu.cfs_burst_us", "kubepods")
    assert not v2.supported("cpu.pressure", "missing")


def test_anolis_v1_supports_bvt_and_memory_qos(tmp_path):
    host = build_v1_tree(tmp_path, anolis=True)
    add_cgroup(host, "kubepods")
    files = CgroupFiles(host)
    assert files.supported("cpu.bvt_warp_ns", "kubepods")
    assert files.supported("memory.min", "kubepods")
    assert files.path("cpu.pressure", "kubepods").parent.parent.name == "cpuacct"


def test_v2_resource_needs_its_controller(tmp_path):
    host = build_v2_tree(tmp_path, controllers=("cpu", "pids"))
    files = CgroupFiles(host)
    assert files.supported("cpu.shares")
    assert not files.supported("memory.limit_in_bytes")
    assert files.supported("cgroup.procs")


def test_read_parses_by_version(v1, v2):
    assert v1.read("cpu.cfs_quota_us", POD) == -1
    assert v2.read("cpu.cfs_quota_us", POD) == -1
    assert v1.read("memory.limit_in_bytes", POD) == -1
    assert v2.read("memory.limit_in_bytes", POD) == -1
    assert v1.read("cpu.shares", POD) == 1024
    assert shares_to_weight(v2.read("cpu.shares", POD)) == 100  # the kernel's default weight
    assert v1.read("cpuset.cpus", POD) == frozenset(range(4))


def test_write_converts_for_v2(v2):
    write_value(v2, "cpu.shares", POD, 1024)
    write_value(v2, "memory.limit_in_bytes", POD, -1)
    assert v2.read_text("cpu.shares", POD) == "39"
    assert v2.read_text("memory.limit_in_bytes", POD) == "max"


def test_write_period_on_v2_keeps_the_quota(v2):
    (v2.host.cgroup_root / POD / "cpu.max").write_text("20000 100000\n")
    write_value(v2, "cpu.cfs_period_us", POD, 50000)
    assert v2.read_text("cpu.cfs_period_us", POD) == "20000 50000"


def test_invalid_value_writes_nothing(v1):
    before = v1.read_text("cpuset.cpus", POD)
    with pytest.raises(InvalidValue):
        write_value(v1, "cpuset.cpus", POD, "0-")
    with pytest.raises(InvalidValue):
        write_value(v1, "cpu.cfs_quota_us", POD, 10)
    assert v1.read_text("cpuset.cpus", POD) == before
    assert v1.read_text("cpu.cfs_quota_us", POD) == "-1"


def test_read_only_resources_refuse_writes(v1):
    before = v1.read_text("cpuacct.usage", POD)
    for name, value in (("memory.stat", {}), ("cpuacct.usage", 0)):
        with pytest.raises(NotSupported, match="no updater"):
            write_value(v1, name, POD, value)
        with pytest.raises(InvalidValue, match="read-only"):
            REGISTRY[name].validate(value)
    assert v1.read_text("cpuacct.usage", POD) == before


def test_missing_dir_is_gone_and_missing_file_is_not_supported(v1):
    with pytest.raises(Gone):
        v1.read("cpu.shares", POD + "/ctr-gone")
    with pytest.raises(Gone):
        write_value(v1, "cpu.shares", POD + "/ctr-gone", 2)
    with pytest.raises(NotSupported):
        v1.read("cpu.bvt_warp_ns", POD)


def test_dotdot_dir_is_refused(v1):
    with pytest.raises(InvalidValue):
        v1.path("cpu.shares", "kubepods/../../etc")
    assert clean_cgroup_dir("/a//b/") == "a/b"


def test_exists(v1, v2):
    assert v1.exists(POD)
    assert v1.exists(POD, "memory")
    assert not v1.exists(POD + "/x")
    assert v2.exists(POD, "cpuset")


def test_detects_modes(tmp_path):
    assert detect_hierarchy(build_v1_tree(tmp_path / "a")).mode is CgroupMode.V1
    assert detect_hierarchy(build_v2_tree(tmp_path / "b")).mode is CgroupMode.V2
    hybrid = detect_hierarchy(build_hybrid_tree(tmp_path / "c"))
    assert hybrid.mode is CgroupMode.HYBRID
    assert hybrid.unified_root == tmp_path / "c/sys/fs/cgroup/unified"
    assert hybrid.version_of("cpu") == 1
    assert hybrid.controller_root("memory") == tmp_path / "c/sys/fs/cgroup/memory"


def test_no_cgroup_tree_is_not_supported(tmp_path):
    from system.host import Host

    with pytest.raises(NotSupported):
        detect_hierarchy(Host.under(tmp_path))


def test_v2_controller_versions(tmp_path):
    h = detect_hierarchy(build_v2_tree(tmp_path, controllers=("cpu", "memory")))
    assert h.version_of("cpuacct") == 2
    assert h.controller_root("blkio") is None
    assert h.controller_root("cpu") == h.unified_root


def test_no_bare_oserror_on_unreadable_file(v1):
    path = v1.path("cpu.shares", POD)
    os.unlink(path)
    os.mkdir(path)  # reading a directory fails with EISDIR
    with pytest.raises(Exception) as info:
        v1.read("cpu.shares", POD)
    assert not type(info.value) is OSError


def test_combined_v1_mount_without_symlinks(tmp_path):
    host = build_v1_tree(tmp_path, controllers=("cpuset", "memory"))
    combined = host.cgroup("cpu,cpuacct")
    combined.mkdir()
    for name, text in {"cpu.shares": "1024", "cpuacct.usage": "77", "cgroup.procs": ""}.items():
        (combined / name).write_text(text)
    files = CgroupFiles(host)
    assert files.hierarchy.controller_root("cpuacct") == combined
    assert files.read("cpuacct.usage", "") == 77
    assert files.path("cpu.shares", "a") == combined / "a" / "cpu.shares"


@pytest.mark.parametrize("bad", ["..", "a/..", "../a", "a/\x00b"])
def test_fast_path_still_refuses_unsafe_dirs(v1, bad):
    with pytest.raises(InvalidValue):
        v1.read("cpu.shares", bad)


def test_non_ascii_text_is_invalid(v1):
    with pytest.raises(InvalidValue):
        write_raw(v1, "cpu.shares", POD, "1024é")
    assert v1.read("cpu.shares", POD) == 1024


def test_children_lists_child_cgroups(v1, v2):
    assert v1.children("kubepods") == ("kubepods/burstable",)
    assert v1.children("kubepods/burstable", "memory") == (POD,)
    assert "kubepods" in v2.children("")
    with pytest.raises(Gone):
        v1.children("kubepods/nothing")
