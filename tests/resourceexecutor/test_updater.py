"""The updater factory: paths, texts, merge rules and refusals, per cgroup version."""
from __future__ import annotations

import pytest

from resourceexecutor.levelled_order import larger_limit, union_cpuset
from resourceexecutor.updater import UpdaterFactory
from system.cgroup_files import CgroupFiles
from system.errors import InvalidValue, NotSupported

C1 = "kubepods/pod1/c1"


@pytest.fixture
def v1(v1_host):
    return UpdaterFactory(CgroupFiles(v1_host))


@pytest.fixture
def v2(v2_host):
    return UpdaterFactory(CgroupFiles(v2_host))


@pytest.mark.parametrize("name, value", [("cpu.shares", 2), ("cpu.cfs_quota_us", 1000),
                                         ("cpuset.cpus", "0"), ("memory.limit_in_bytes", 0),
                                         ("memory.min", 0)])
@pytest.mark.parametrize("cgroup_dir", ["", C1, "/kubepods/pod1/c1/", "kubepods//pod1/./c1"])
def test_paths_match_the_system_layout(v1, v2, name, value, cgroup_dir):
    for factory in (v1, v2):
        updater = factory.new(name, cgroup_dir, value)
        assert updater.problem is None
        assert updater.path == str(factory.files.path(name, cgroup_dir))
        assert updater.cgroup_dir == cgroup_dir.strip("/").replace("//", "/").replace("/./", "/")


def test_text_and_read_back_value_per_version(v1, v2):
    shares_v1, shares_v2 = v1.new("cpu.shares", C1, 1024), v2.new("cpu.shares", C1, 1024)
    assert (shares_v1.text, shares_v1.canonical) == ("1024", 1024)
    assert shares_v2.text == "39"  # kubelet formula
    assert shares_v2.canonical == shares_v2.parse("39")  # what reading cpu.weight yields
    assert v2.new("memory.high", C1, -1).text == "max"
    assert v1.new("memory.limit_in_bytes", C1, -1).text == "-1"
    assert v2.new("cpuset.cpus", C1, "3,0-1").canonical == frozenset({0, 1, 3})


def test_merge_rules_follow_the_registry_and_v1_quota(v1, v2):
    assert v1.new("cpuset.cpus", C1, "0").merge is union_cpuset
    assert v2.new("memory.low", C1, 1).merge is larger_limit
    assert v1.new("cpu.cfs_quota_us", C1, 1000).merge is larger_limit
    assert v2.new("cpu.cfs_quota_us", C1, 1000).merge is None
    assert v1.new("cpu.shares", C1, 2).merge is None


def test_refusals_are_carried_or_raised(v1, v2):
    for bad in (1, True, 1.0, "many"):
        updater = v1.new("cpu.shares", C1, bad)
        assert isinstance(updater.problem, InvalidValue) and updater.text is None, bad
    v1.new("cpu.shares", C1, 2)  # a remembered good value must not vouch for an equal bad one
    assert isinstance(v1.new("cpu.shares", C1, True).problem, InvalidValue)
    assert isinstance(v1.new("cpu.shares", "../escape", 2).problem, InvalidValue)
    assert isinstance(v2.new("memory.soft_limit_in_bytes", C1, 1).problem, NotSupported)
    with pytest.raises(InvalidValue):
        v1.new("cpu.shares", C1, 1, strict=True)
    with pytest.raises(NotSupported):
        v2.new("memory.soft_limit_in_bytes", C1, 1, strict=True)
    with pytest.raises(NotSupported):
        v1.new("cpu.nonsense", C1, 1)
    with pytest.raises(NotSupported):
        v1.new("cpu.stat", C1, 1)  # read-only: no updater registered
