"""The codecs one by one, against kernel file texts (Documentation/admin-guide/cgroup-v1/
*.rst, cgroup-v2.rst) with fixed expected values, including what each must refuse."""

from __future__ import annotations

import pytest

from system.cgroup_codecs import (
    MAX_INT64,
    BlkioAsIoWeight,
    CpuMaxField,
    CpusetValue,
    DeviceLimit,
    DeviceLimitCodec,
    DeviceValue,
    IntCodec,
    IntRange,
    KeyFieldCodec,
    KeyValuesCodec,
    PidListCodec,
    RawCodec,
    ReadOnly,
    io_weight_to_blkio_weight,
    parse_key_values,
)
from system.errors import InvalidValue

# ---- validators

@pytest.mark.parametrize("value", [5, "5", " 7 ", 10])
def test_int_range_accepts_ints_and_integer_text_within_bounds(value):
    IntRange(5, 10).validate(value)


@pytest.mark.parametrize("value", [4, 11, "4", "x", "", 5.0, True, None, [5]])
def test_int_range_refuses_the_rest(value):
    with pytest.raises(InvalidValue):
        IntRange(5, 10).validate(value)


def test_minus_one_is_accepted_only_where_unlimited_is():
    IntRange(0, 10, unlimited=True).validate(-1)
    IntRange(0, 10, unlimited=True).validate("-1")
    with pytest.raises(InvalidValue):
        IntRange(0, 10).validate(-1)
    with pytest.raises(InvalidValue):
        IntRange(0, 10, unlimited=True).validate(-2)


def test_cpuset_value_accepts_lists_and_sets_and_refuses_other_types():
    for value in ("0-3,5", "", frozenset({1, 2}), {0}, [3, 1], (2,)):
        CpusetValue().validate(value)
    for value in ("0-", "3-1", "a", 5, None, {"a"}, [-1]):
        with pytest.raises(InvalidValue):
            CpusetValue().validate(value)


def test_device_value_wants_three_non_negative_ints():
    DeviceValue().validate(DeviceLimit(8, 0, 0))
    DeviceValue().validate(DeviceLimit(0, 0, MAX_INT64))
    for bad in (DeviceLimit(-1, 0, 1), DeviceLimit(8, -1, 1), DeviceLimit(8, 0, -1),
                DeviceLimit(8, 0, MAX_INT64 + 1), DeviceLimit(True, 0, 1), DeviceLimit(8, 0, "1"),
                DeviceLimit(8, 1.0, 1), "8:0 1", None):
        with pytest.raises(InvalidValue):
            DeviceValue().validate(bad)


@pytest.mark.parametrize("value", [0, "0", None, {}])
def test_read_only_refuses_everything(value):
    with pytest.raises(InvalidValue, match="read-only"):
        ReadOnly().validate(value)


# ---- integer files

def test_int_codec_tokens_and_v1_unlimited_memory():
    v1_mem = IntCodec("-1", 0x7FFFFFFFFFFFF000 - (1 << 32))
    assert v1_mem.parse("9223372036854771712\n") == -1  # PAGE_COUNTER_MAX * 4096
    assert v1_mem.parse("268435456") == 268435456
    assert v1_mem.format(-1) == "-1" and v1_mem.format("42") == "42"
    assert IntCodec("max").format(-1) == "max"
    assert IntCodec("max").parse(" max\n") == -1
    assert IntCodec().format(-1) == "-1"  # no token: -1 is just a number
    assert IntCodec().parse("  12 \n") == 12
    for bad in ("", "1.5", "max max", "0x10"):
        with pytest.raises(InvalidValue):
            IntCodec().parse(bad)


# ---- cpu.max

def test_cpu_max_quota_field():
    quota = CpuMaxField(0)
    assert quota.format(-1) == "max" and quota.format(50000) == "50000"
    assert quota.parse("max 100000") == -1
    assert quota.parse("50000 100000\n") == 50000
    assert quota.parse("20000") == 20000  # written alone, as the kernel accepts


def test_cpu_max_period_field_keeps_the_quota():
    period = CpuMaxField(1)
    assert period.format(50000, "20000 100000") == "20000 50000"
    assert period.format(50000, "max 100000\n") == "max 50000"
    assert period.format(50000, None) == "max 50000"
    assert period.format(50000, "") == "max 50000"
    assert period.parse("max 100000") == 100000
    assert period.parse("20000 50000") == 50000


@pytest.mark.parametrize("text", ["", "1 2 3", "max", "100000 a"])
def test_cpu_max_period_refuses_other_shapes(text):
    with pytest.raises(InvalidValue):
        CpuMaxField(1).parse(text)


@pytest.mark.parametrize("text", ["", "1 2 3", "x 100000"])
def test_cpu_max_quota_refuses_other_shapes(text):
    with pytest.raises(InvalidValue):
        CpuMaxField(0).parse(text)


# ---- io.weight

def test_io_weight_reads_the_default_line_among_device_lines():
    codec = BlkioAsIoWeight()
    assert codec.format(500) == "default 4950"
    assert codec.parse("8:0 300\ndefault 4950\n") == 500
    assert codec.parse("default 1") == 10
    assert codec.parse("default 10000\n") == 1000
    for bad in ("", "8:0 300\n", "default\n", "default 1 2\n", "defaults 100\n"):
        with pytest.raises(InvalidValue):
            codec.parse(bad)


def test_io_weight_to_blkio_weight_clamps_outside_the_v2_range():
    assert io_weight_to_blkio_weight(0) == 10
    assert io_weight_to_blkio_weight(20000) == 1000


# ---- key/value files (memory.stat, cpu.stat)

def test_key_values_parse_skips_blank_lines_and_refuses_bad_ones():
    values = parse_key_values("usage_usec 12\n\nnr_periods 3\n")
    assert dict(values) == {"usage_usec": 12, "nr_periods": 3}
    with pytest.raises(TypeError):
        values["x"] = 1  # type: ignore[index]
    for bad in ("usage_usec\n", "a 1 2\n", "a b\n"):
        with pytest.raises(InvalidValue):
            parse_key_values(bad)
    assert KeyValuesCodec().format({"a": 1, "b": 2}) == "a 1\nb 2\n"
    assert dict(KeyValuesCodec().parse("a 1\n")) == {"a": 1}


def test_key_field_scales_and_needs_its_key():
    usage = KeyFieldCodec("usage_usec", 1000)
    assert usage.parse("usage_usec 12\nuser_usec 10\n") == 12000
    assert usage.format(12000) == "usage_usec 12\n"
    assert KeyFieldCodec("nr_periods").parse("nr_periods 7\n") == 7
    with pytest.raises(InvalidValue, match="usage_usec"):
        usage.parse("user_usec 10\n")


# ---- pid lists, device limits, raw text

def test_pid_list():
    assert PidListCodec().parse("1\n22\n333\n") == (1, 22, 333)
    assert PidListCodec().parse("") == ()
    assert PidListCodec().format(42) == "42"
    with pytest.raises(InvalidValue):
        PidListCodec().parse("1\nx\n")


def test_device_limit_lines():
    codec = DeviceLimitCodec()
    assert codec.format(DeviceLimit(8, 16, 1048576)) == "8:16 1048576"
    assert codec.parse("8:0 100\n\n253:1 2000\n") == (DeviceLimit(8, 0, 100), DeviceLimit(253, 1, 2000))
    assert codec.parse("") == ()
    with pytest.raises(InvalidValue):
        codec.format("8:0 1")
    for bad in ("8 100\n", "8:x 100\n", "8:0\n", "8:0 x\n"):
        with pytest.raises(InvalidValue):
            codec.parse(bad)


def test_raw_text_passes_through():
    text = "N0=1 N1=2\n"
    assert RawCodec().parse(text) == text
    assert RawCodec().format(12) == "12"


# ---- mutation survivors: boundaries and messages that make an error clear

def test_io_weight_reads_back_as_the_smallest_blkio_weight_that_writes_it():
    from system.cgroup_codecs import blkio_weight_to_io_weight

    for io in (2, 11, 12, 100, 4950, 9999):
        blkio = io_weight_to_blkio_weight(io)
        assert blkio_weight_to_io_weight(blkio) >= io > blkio_weight_to_io_weight(blkio - 1)


def test_v1_memory_unlimited_floor_itself_reads_as_unlimited():
    floor = 0x7FFFFFFFFFFFF000 - (1 << 32)
    codec = IntCodec("-1", floor)
    assert codec.parse(str(floor)) == -1
    assert codec.parse(str(floor - 1)) == floor - 1


def test_key_field_format_is_integer_text():
    assert KeyFieldCodec("usage_usec", 1000).format(12345) == "usage_usec 12\n"


def test_device_line_splits_at_the_first_space_and_colon():
    with pytest.raises(InvalidValue):
        DeviceLimitCodec().parse("8:0 1 2\n")
    with pytest.raises(InvalidValue):
        DeviceLimitCodec().parse("8:0:1 5\n")


@pytest.mark.parametrize("check, value, message", [
    (IntRange(5, 10).validate, 11, r"value 11 outside \[5, 10\]"),
    (IntRange(5, 10).validate, "x", r"not an integer: 'x'"),
    (IntRange(5, 10).validate, 5.5, r"not an integer: 5\.5"),
    (CpusetValue().validate, 3, r"not a cpu list: 3"),
    (DeviceValue().validate, "8:0 1", r"expected DeviceLimit, got '8:0 1'"),
    (DeviceValue().validate, DeviceLimit(8, -1, 0), r"bad device limit DeviceLimit\(major=8, minor=-1"),
    (DeviceLimitCodec().format, "8:0 1", r"expected DeviceLimit, got '8:0 1'"),
    (DeviceLimitCodec().parse, "8 1", r"bad device line '8 1'"),
    (IntCodec().parse, "1.5", r"not an integer: '1.5'"),
    (CpuMaxField(1).parse, "1 2 3", r"cpu.max wants '\$MAX \$PERIOD': '1 2 3'"),
    (BlkioAsIoWeight().parse, "8:0 1", r"io.weight has no default line: '8:0 1'"),
    (parse_key_values, "a 1 2", r"bad key/value line 'a 1 2'"),
    (parse_key_values, "a b", r"bad value in line 'a b'"),
    (KeyFieldCodec("k").parse, "j 1", r"no 'k' in key/value text"),
])
def test_refusals_say_what_was_wrong(check, value, message):
    with pytest.raises(InvalidValue, match="^" + message):
        check(value)


# ---- the resource table's own logic

def test_v1_quota_merges_as_a_limit_v2_does_not():
    from system.cgroup_resource import REGISTRY, MergeKind

    quota = REGISTRY["cpu.cfs_quota_us"]
    assert quota.merge_for(1) is MergeKind.MAX_VALUE and quota.merge_for(2) is MergeKind.NONE
    assert quota.merged(50000, 20000, 1) == 50000 and quota.merged(50000, 20000, 2) == 20000
    assert quota.merged(-1, 20000, 1) == -1
    shares = REGISTRY["cpu.shares"]
    assert shares.merge_for(1) is shares.merge_for(2) is MergeKind.NONE


def test_read_back_rounds_positive_byte_limits_down_to_a_page():
    from system.cgroup_resource import REGISTRY

    limit = REGISTRY["memory.limit_in_bytes"]
    assert limit.read_back(1000000, 4096) == 999424  # the kernel's page_counter rounding
    assert limit.read_back(8192, 4096) == 8192
    assert limit.read_back(1, 4096) == 0
    assert limit.read_back(-1, 4096) == -1 and limit.read_back(0, 4096) == 0
    assert REGISTRY["cpu.shares"].read_back(1000, 4096) == 1000  # not page-kept


def test_matches_a_period_against_the_whole_cpu_max_text():
    from system.cgroup_resource import REGISTRY

    period = REGISTRY["cpu.cfs_period_us"]
    assert period.matches(50000, "20000 50000", 2)
    assert not period.matches(100000, "20000 50000", 2)


def test_table_refusals_name_the_resource():
    from system.cgroup_resource import REGISTRY, get_resource
    from system.errors import NotSupported

    with pytest.raises(NotSupported, match="^memory.soft_limit_in_bytes has no cgroup v2 file"):
        REGISTRY["memory.soft_limit_in_bytes"].codec(2)
    with pytest.raises(InvalidValue, match="^memory.stat is read-only"):
        REGISTRY["memory.stat"].validate({})
    with pytest.raises(NotSupported, match="^unknown cgroup resource 'cpu.nothing'"):
        get_resource("cpu.nothing")


def test_the_table_refuses_a_name_declared_twice():
    from system.cgroup_resource import REGISTRY, _build, _int

    assert _int(1, 5, True) == IntRange(1, 5, True)
    assert _int(3) == IntRange(3, MAX_INT64, False)
    one = REGISTRY["cpu.shares"]
    assert dict(_build((one,))) == {"cpu.shares": one}
    with pytest.raises(ValueError, match="^duplicate cgroup resource 'cpu.shares'"):
        _build((one, one))
