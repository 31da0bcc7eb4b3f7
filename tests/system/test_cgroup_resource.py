
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system.cgroup_codecs import (
    DeviceLimit,
    blkio_weight_to_io_weight,
    io_weight_to_blkio_weight,
    shares_to_weight,
    weight_to_shares,
)
from system.cgroup_resource import REGISTRY, MergeKind, get_resource
from system.errors import InvalidValue, NotSupported
from system.psi import Psi, PsiLine

ANCHOR_V1_FILES = [
    "cpu.stat", "cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.cfs_burst_us",
    "cpu.bvt_warp_ns", "tasks", "cgroup.procs", "cpuset.cpus", "cpuacct.stat", "cpuacct.usage",
    "cpu.pressure", "memory.pressure", "io.pressure", "memory.limit_in_bytes",
    "memory.usage_in_bytes", "memory.stat", "memory.min", "memory.low", "memory.high",
    "memory.wmark_ratio", "memory.wmark_scale_factor", "memory.wmark_min_adj", "memory.priority",
    "memory.use_priority_oom", "memory.oom.group", "blkio.throttle.read_bps_device",
    "blkio.throttle.write_bps_device", "blkio.throttle.read_iops_device",
    "blkio.throttle.write_iops_device",
]
V2_TWINS = {
    "cpu.shares": "cpu.weight", "cpu.cfs_quota_us": "cpu.max", "cpu.cfs_period_us": "cpu.max",
    "cpu.cfs_burst_us": "cpu.max.burst", "memory.limit_in_bytes": "memory.max",
    "memory.usage_in_bytes": "memory.current", "cpuacct.usage": "cpu.stat", "tasks": "cgroup.threads",
    "cpuset.cpus.effective": "cpuset.cpus.effective", "cpu.idle": "cpu.idle",
    "blkio.weight": "io.weight",
}


def test_registry_covers_every_anchor_file():
    for name in ANCHOR_V1_FILES:
        assert REGISTRY[name].v1_file == name


@pytest.mark.parametrize("name, v2", sorted(V2_TWINS.items()))
def test_registry_maps_v1_files_to_v2_twins(name, v2):
    assert REGISTRY[name].v2_file == v2


def test_registry_is_immutable():
    with pytest.raises(TypeError):  # read-only: nobody adds a resource at run time
        REGISTRY["cpu.new"] = REGISTRY["cpu.shares"]  # type: ignore[index]
    with pytest.raises(TypeError):
        REGISTRY["x"] = REGISTRY["cpu.shares"]  # type: ignore[index]


def test_unknown_resource_is_not_supported():
    with pytest.raises(NotSupported):
        get_resource("cpu.nonsense")


def test_merge_kinds_of_hierarchical_files():
    assert REGISTRY["cpuset.cpus"].merge is MergeKind.UNION_CPUSET
    for name in ("memory.min", "memory.low", "memory.high"):
        assert REGISTRY[name].merge is MergeKind.MAX_VALUE
    assert REGISTRY["cpu.shares"].merge is MergeKind.NONE


def test_merged_values():
    assert REGISTRY["cpuset.cpus"].merged("0-1", frozenset({3})) == frozenset({0, 1, 3})
    assert REGISTRY["memory.high"].merged(100, 50) == 100
    assert REGISTRY["memory.high"].merged(100, -1) == -1


@pytest.mark.parametrize(
    "name, value",
    [("cpu.shares", 1), ("cpu.shares", 262145), ("cpu.cfs_quota_us", 999),
     ("cpu.cfs_quota_us", -2), ("cpu.bvt_warp_ns", 3), ("cpu.idle", 2), ("cpuset.cpus", "0-"),
     ("cpuset.cpus", {-1}), ("memory.limit_in_bytes", -5), ("memory.wmark_min_adj", 51),
     ("cpu.shares", "ten"), ("cpu.shares", True), ("memory.stat", {}), ("cpuacct.usage", 5),
     ("blkio.weight", 5), ("blkio.throttle.read_bps_device", "8:0 10")],
)
def test_validators_refuse_out_of_range_values(name, value):
    with pytest.raises(InvalidValue):
        REGISTRY[name].validate(value)


@pytest.mark.parametrize(
    "name, value",
    [("cpu.shares", 2), ("cpu.shares", 262144), ("cpu.cfs_quota_us", -1),
     ("cpu.cfs_quota_us", 1000), ("cpu.bvt_warp_ns", -1), ("cpuset.cpus", "0-3,8"),
     ("cpuset.cpus", frozenset({1})), ("memory.limit_in_bytes", -1), ("memory.high", 1 << 30),
     ("blkio.throttle.read_bps_device", DeviceLimit(8, 0, 1048576))],
)
def test_validators_accept_valid_values(name, value):
    REGISTRY[name].validate(value)


# cpu.shares -> cpu.weight as runc (ConvertCPUSharesToCgroupV2Value, linear form) and kubelet
# write it, and as koordinator reads it: the endpoints 2 -> 1 and 262144 -> 10000 and the
# default 1024 -> 39 are the ones the Kubernetes cgroup v2 docs quote; the others are
# runc's outputs for common requests (100m, 500m, 2 and 4 CPUs).
PUBLISHED_SHARES_TO_WEIGHT = {
    2: 1, 10: 1, 102: 4, 512: 20, 1024: 39, 2048: 79, 4096: 157, 262144: 10000,
}
# blkio.weight -> io.weight (runc ConvertBlkIOToCgroupV2Value): 10 -> 1, 500 -> 4950,
# 1000 -> 10000, 100 -> 910.
PUBLISHED_BLKIO_TO_IO_WEIGHT = {10: 1, 100: 910, 500: 4950, 1000: 10000}


@pytest.mark.parametrize("shares, weight", sorted(PUBLISHED_SHARES_TO_WEIGHT.items()))
def test_shares_to_weight_matches_the_published_table(shares, weight):
    assert shares_to_weight(shares) == weight
    assert REGISTRY["cpu.shares"].format(shares, 2) == str(weight)


@pytest.mark.parametrize("shares, weight", sorted(PUBLISHED_SHARES_TO_WEIGHT.items()))
def test_weight_reads_back_as_shares_that_write_the_same_weight(shares, weight):
    back = REGISTRY["cpu.shares"].parse(str(weight), 2)
    assert 2 <= back <= shares
    assert shares_to_weight(back) == weight
    assert back == 2 or shares_to_weight(back - 1) < weight  # the smallest such shares


def test_weight_endpoints_read_back_as_the_shares_endpoints():
    assert weight_to_shares(1) == 2
    assert weight_to_shares(10000) == 262144


@pytest.mark.parametrize("blkio, io", sorted(PUBLISHED_BLKIO_TO_IO_WEIGHT.items()))
def test_blkio_weight_to_io_weight_matches_the_published_table(blkio, io):
    assert blkio_weight_to_io_weight(blkio) == io
    assert REGISTRY["blkio.weight"].format(blkio, 2) == "default %d" % io
    assert REGISTRY["blkio.weight"].parse("default %d\n8:0 300\n" % io, 2) == blkio


@settings(max_examples=300)
@given(st.integers(2, 262143))
def test_shares_to_weight_is_monotonic(shares):
    assert shares_to_weight(shares) <= shares_to_weight(shares + 1)
    assert 1 <= shares_to_weight(shares) <= 10000


@settings(max_examples=300)
@given(st.integers(1, 10000))
def test_weight_survives_shares_round_trip(weight):
    assert shares_to_weight(weight_to_shares(weight)) == weight


@settings(max_examples=300)
@given(st.integers(2, 262144))
def test_shares_round_trip_stays_in_the_same_weight(shares):
    back = weight_to_shares(shares_to_weight(shares))
    assert shares_to_weight(back) == shares_to_weight(shares)
    assert back <= shares


@settings(max_examples=200)
@given(st.integers(10, 1000))
def test_blkio_weight_round_trip(weight):
    assert io_weight_to_blkio_weight(blkio_weight_to_io_weight(weight)) == weight


def test_v2_formats():
    assert REGISTRY["cpu.shares"].format(1024, 2) == "39"
    assert REGISTRY["cpu.cfs_quota_us"].format(-1, 2) == "max"
    assert REGISTRY["cpu.cfs_quota_us"].format(50000, 2) == "50000"
    assert REGISTRY["cpu.cfs_period_us"].format(50000, 2, "max 100000") == "max 50000"
    assert REGISTRY["cpu.cfs_period_us"].format(50000, 2, "20000 100000") == "20000 50000"
    assert REGISTRY["memory.limit_in_bytes"].format(-1, 2) == "max"
    assert REGISTRY["memory.limit_in_bytes"].format(-1, 1) == "-1"
    assert REGISTRY["blkio.weight"].format(500, 2) == "default 4950"


def test_v2_parses():
    assert REGISTRY["cpu.cfs_quota_us"].parse("max 100000", 2) == -1
    assert REGISTRY["cpu.cfs_quota_us"].parse("50000 100000", 2) == 50000
    assert REGISTRY["cpu.cfs_period_us"].parse("max 100000", 2) == 100000
    assert REGISTRY["cpuacct.usage"].parse("usage_usec 12\nuser_usec 10\n", 2) == 12000
    assert REGISTRY["memory.limit_in_bytes"].parse("9223372036854771712", 1) == -1
    assert REGISTRY["memory.high"].parse("max", 2) == -1
    assert REGISTRY["pids.max"].parse("max", 1) == -1
    # io.weight 100 (the kernel default) is written by no blkio weight: it reads back as
    # the smallest blkio weight that writes at least 100
    back = REGISTRY["blkio.weight"].parse("default 100\n8:0 300\n", 2)
    assert blkio_weight_to_io_weight(back) >= 100 > blkio_weight_to_io_weight(back - 1)


def test_unparsable_text_is_invalid_value():
    with pytest.raises(InvalidValue):
        REGISTRY["cpu.shares"].parse("abc", 1)
    with pytest.raises(InvalidValue):
        REGISTRY["cpu.cfs_period_us"].parse("max", 2)
    with pytest.raises(InvalidValue):
        REGISTRY["memory.stat"].parse("cache x\n", 1)


def test_missing_version_file_is_not_supported():
    with pytest.raises(NotSupported):
        REGISTRY["memory.soft_limit_in_bytes"].format(1, 2)
    with pytest.raises(NotSupported):
        REGISTRY["net_cls.classid"].parse("1", 2)


_limited = st.integers(0, (1 << 62))
_int_values = {
    "cpu.cfs_quota_us": st.one_of(st.just(-1), st.integers(1000, 1 << 40)),
    "memory.limit_in_bytes": st.one_of(st.just(-1), _limited),
    "memory.min": st.one_of(st.just(-1), _limited),
    "memory.high": st.one_of(st.just(-1), _limited),
    "pids.max": st.one_of(st.just(-1), st.integers(0, 1 << 22)),
    "cpu.cfs_burst_us": st.integers(0, 100 * 10 * 100000),
    "cpu.bvt_warp_ns": st.integers(-1, 2),
    "memory.wmark_min_adj": st.integers(-25, 50),
    "cpu.idle": st.integers(0, 1),
    "memory.oom.group": st.integers(0, 1),
}


@settings(max_examples=60)
@given(st.data())
@pytest.mark.parametrize("name", sorted(_int_values))
@pytest.mark.parametrize("version", [1, 2])
def test_int_resources_round_trip(name, version, data):
    value = data.draw(_int_values[name])
    res = REGISTRY[name]
    res.validate(value)
    text = res.format(value, version, "max 100000")
    assert res.parse(text, version) == value


@settings(max_examples=100)
@given(st.integers(1000, 1_000_000), st.one_of(st.just(-1), st.integers(1000, 1 << 40)))
def test_cpu_max_period_keeps_quota(period, quota):
    current = REGISTRY["cpu.cfs_quota_us"].format(quota, 2) + " 100000"
    text = REGISTRY["cpu.cfs_period_us"].format(period, 2, current)
    assert REGISTRY["cpu.cfs_period_us"].parse(text, 2) == period
    assert REGISTRY["cpu.cfs_quota_us"].parse(text, 2) == quota


@settings(max_examples=100)
@given(st.frozensets(st.integers(0, 1023), max_size=40), st.sampled_from([1, 2]))
def test_cpuset_resource_round_trip(ids, version):
    res = REGISTRY["cpuset.cpus"]
    assert res.parse(res.format(ids, version), version) == ids


_kv = st.dictionaries(
    st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=20), st.integers(0, 1 << 62),
    max_size=30,
)


@settings(max_examples=100)
@given(_kv)
def test_key_values_round_trip(values):
    res = REGISTRY["memory.stat"]
    assert dict(res.parse(res.format(values, 1), 1)) == values


_psi_line = st.builds(
    PsiLine,
    st.integers(0, 10000).map(lambda x: x / 100),
    st.integers(0, 10000).map(lambda x: x / 100),
    st.integers(0, 10000).map(lambda x: x / 100),
    st.integers(0, 1 << 50),
)


@settings(max_examples=100)
@given(st.builds(Psi, _psi_line, st.one_of(st.none(), _psi_line)))
def test_psi_round_trip(psi):
    res = REGISTRY["cpu.pressure"]
    assert res.parse(res.format(psi, 2), 2) == psi


@settings(max_examples=100)
@given(st.integers(0, 4095), st.integers(0, 1 << 20), st.integers(0, 1 << 62))
def test_device_limit_round_trip(major, minor, value):
    res = REGISTRY["blkio.throttle.write_iops_device"]
    limit = DeviceLimit(major, minor, value)
    res.validate(limit)
    assert res.parse(res.format(limit, 1), 1) == (limit,)


@settings(max_examples=100)
@given(st.integers(2, 262144))
def test_shares_resource_v2_parse_inverts_format_on_weights(shares):
    res = REGISTRY["cpu.shares"]
    text = res.format(shares, 2)
    assert res.format(res.parse(text, 2), 2) == text


def test_matches_compares_through_kernel_text():
    assert REGISTRY["cpu.shares"].matches(1024, "39", 2)
    assert not REGISTRY["cpu.shares"].matches(2048, "39", 2)
    assert REGISTRY["cpu.cfs_quota_us"].matches(50000, "50000 100000", 2)
    assert REGISTRY["cpu.cfs_quota_us"].matches(-1, "max 100000", 2)
    assert REGISTRY["cpu.cfs_period_us"].matches(100000, "max 100000", 2)
    assert REGISTRY["memory.limit_in_bytes"].matches(-1, "9223372036854771712", 1)
    assert REGISTRY["cpuset.cpus"].matches("0-1", "0,1", 1)
    assert not REGISTRY["cpu.shares"].matches(1024, "garbage", 1)


@pytest.mark.parametrize("shares, weight", sorted(PUBLISHED_SHARES_TO_WEIGHT.items()))
def test_shares_match_the_published_weight_and_no_other(shares, weight):
    res = REGISTRY["cpu.shares"]
    assert res.matches(shares, str(weight), 2)
    assert res.matches(shares, "%d\n" % weight, 2)
    assert weight == 10000 or not res.matches(shares, str(weight + 1), 2)
    assert weight == 1 or not res.matches(shares, str(weight - 1), 2)
    assert res.matches(shares, str(shares), 1)
    assert not res.matches(shares, str(shares + 1), 1)
