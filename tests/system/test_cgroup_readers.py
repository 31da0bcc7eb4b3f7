import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system.cgroup_files import CgroupFiles
from system.cgroup_readers import (
    CgroupReader,
    CpuMax,
    Throttling,
    memory_used_bytes,
    throttling_from_cpu_stat,
    working_set_bytes,
)
from system.errors import Gone, InvalidValue
from system.kept_files import KeptFiles
from system.psi import Psi, PsiLine
from tests.system.fake_trees import add_cgroup, build_hybrid_tree, build_v1_tree, build_v2_tree

POD = "kubepods/pod1"
PSI_TEXT = (
    "some avg10=1.50 avg60=0.75 avg300=0.10 total=123456\n"
    "full avg10=0.50 avg60=0.25 avg300=0.05 total=23456\n"
)


def _reader(host, keep_open, overrides):
    add_cgroup(host, "kubepods")
    add_cgroup(host, POD, overrides)
    return CgroupReader(CgroupFiles(host), keep_open=keep_open)


V1_OVERRIDES = {
    "cpuacct.usage": "5000000000",
    "cpu.stat": "nr_periods 10\nnr_throttled 4\nthrottled_time 7000\nnr_bursts 0\nburst_time 0\n",
    "cpu.cfs_quota_us": "50000",
    "memory.usage_in_bytes": "100000",
    "memory.stat": "inactive_file 99\ntotal_inactive_file 30000\ntotal_active_anon 500\n"
                   "total_inactive_anon 20\ntotal_unevictable 3\n",
    "cpu.pressure": PSI_TEXT,
}
V2_OVERRIDES = {
    "cpu.stat": "usage_usec 5000000\nuser_usec 1\nsystem_usec 1\nnr_periods 10\n"
                "nr_throttled 4\nthrottled_usec 7\n",
    "cpu.max": "50000 100000",
    "memory.current": "100000",
    "memory.stat": "anon 500\ninactive_file 30000\nactive_anon 500\ninactive_anon 20\n"
                   "unevictable 3\n",
    "cpu.pressure": PSI_TEXT,
}


@pytest.fixture(params=[False, True], ids=["open-per-read", "kept-fd"])
def keep_open(request):
    return request.param


def test_v1_readers(tmp_path, keep_open):
    host = build_v1_tree(tmp_path, anolis=True)
    with _reader(host, keep_open, V1_OVERRIDES) as reader:
        assert reader.cpu_usage_ns(POD) == 5_000_000_000
        assert reader.throttling(POD) == Throttling(10, 4, 7000)
        assert reader.cpu_max(POD) == CpuMax(50000, 100000)
        assert reader.cpu_max(POD).cpus == 0.5
        assert reader.memory_working_set_bytes(POD) == 70000
        assert reader.memory_used_bytes(POD) == 523
        assert reader.cpuset_cpus(POD) == frozenset(range(4))
        assert reader.cpuset_mems(POD, effective=True) == frozenset({0})
        assert reader.psi(POD, "cpu").some == PsiLine(1.5, 0.75, 0.1, 123456)


def test_v2_readers(tmp_path, keep_open):
    host = build_v2_tree(tmp_path)
    with _reader(host, keep_open, V2_OVERRIDES) as reader:
        assert reader.cpu_usage_ns(POD) == 5_000_000_000
        assert reader.throttling(POD) == Throttling(10, 4, 7000)
        assert reader.cpu_max(POD) == CpuMax(50000, 100000)
        assert reader.memory_working_set_bytes(POD) == 70000
        assert reader.memory_used_bytes(POD) == 523
        assert reader.cpuset_cpus(POD, effective=True) == frozenset(range(4))
        assert reader.psi(POD, "cpu").full == PsiLine(0.5, 0.25, 0.05, 23456)
        assert reader.cpu_shares(POD) == 2 + -(-99 * 262142 // 9999)


def test_hybrid_reads_psi_from_unified_and_usage_from_v1(tmp_path, keep_open):
    host = build_hybrid_tree(tmp_path)
    with _reader(host, keep_open, {**V1_OVERRIDES, "cpu.pressure": PSI_TEXT}) as reader:
        assert reader.cpu_usage_ns(POD) == 5_000_000_000
        assert reader.psi(POD, "cpu").some.total_us == 123456
        assert reader.throttling(POD).nr_throttled == 4


def test_kept_fd_sees_fresh_values_on_rewrite(tmp_path):
    host = build_v1_tree(tmp_path)
    with _reader(host, True, V1_OVERRIDES) as reader:
        assert reader.cpu_usage_ns(POD) == 5_000_000_000
        path = reader.files.path("cpuacct.usage", POD)
        with open(path, "r+") as handle:  # same inode, like a kernel file's new value
            handle.write("6000000000")
        assert reader.cpu_usage_ns(POD) == 6_000_000_000


def test_missing_cgroup_is_gone(tmp_path, keep_open):
    host = build_v1_tree(tmp_path)
    with _reader(host, keep_open, {}) as reader:
        with pytest.raises(Gone):
            reader.cpu_usage_ns("kubepods/podgone")


def test_unknown_psi_kind_is_invalid(tmp_path):
    host = build_v2_tree(tmp_path)
    with _reader(host, False, {}) as reader, pytest.raises(InvalidValue):
        reader.psi(POD, "disk")


def test_kept_files_pool_is_bounded(tmp_path):
    paths = []
    for i in range(5):
        path = tmp_path / ("f%d" % i)
        path.write_text(str(i))
        paths.append(path)
    with KeptFiles(max_open=3) as kept:
        assert [kept.read_text(p) for p in paths] == ["0", "1", "2", "3", "4"]
        assert len(kept) == 3
        assert kept.drop_under(tmp_path) == 3
        assert len(kept) == 0


def test_throttling_needs_the_cpu_controller():
    with pytest.raises(InvalidValue):
        throttling_from_cpu_stat({"usage_usec": 1}, 2)


@settings(max_examples=200)
@given(st.integers(0, 1 << 40), st.integers(0, 1 << 40), st.sampled_from([1, 2]))
def test_working_set_is_usage_minus_inactive_file_never_negative(usage, inactive, version):
    key = "total_inactive_file" if version == 1 else "inactive_file"
    ws = working_set_bytes(usage, {key: inactive}, version)
    assert ws == max(0, usage - inactive)
    assert 0 <= ws <= usage


def test_working_set_uses_the_hierarchical_key_on_v1():
    stat = {"inactive_file": 1, "total_inactive_file": 10}
    assert working_set_bytes(100, stat, 1) == 90
    assert working_set_bytes(100, stat, 2) == 99
    with pytest.raises(InvalidValue):
        working_set_bytes(100, {"inactive_file": 1}, 1)


def test_memory_used_keys_per_version():
    assert memory_used_bytes({"total_active_anon": 2, "active_anon": 100}, 1) == 2
    assert memory_used_bytes({"active_anon": 2, "inactive_anon": 1, "unevictable": 1}, 2) == 4


def test_psi_value_type(tmp_path):
    host = build_v2_tree(tmp_path)
    with _reader(host, True, {}) as reader:
        psi = reader.psi(POD, "io")
    assert isinstance(psi, Psi)
    assert (psi.some.avg10, psi.some.total_us, psi.full.total_us) == (0.0, 0, 0)  # PSI_ZERO


def test_fake_tree_helpers_change_samples_and_remove_pods(tmp_path):
    from tests.system.fake_trees import remove_cgroup, set_cgroup_file

    host = build_hybrid_tree(tmp_path)
    with _reader(host, False, {}) as reader:
        assert set_cgroup_file(host, POD, "cpu.pressure", PSI_TEXT) == 1
        assert reader.psi(POD, "cpu").some.total_us == 123456
        assert set_cgroup_file(host, POD, "cgroup.procs", "") == 7  # 6 v1 + unified
        remove_cgroup(host, POD)
        with pytest.raises(Gone):
            reader.cpu_usage_ns(POD)
