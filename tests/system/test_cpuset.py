import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system.cpuset import format_cpuset, parse_cpuset
from system.errors import InvalidValue


@pytest.mark.parametrize(
    "text, ids",
    [("", set()), ("0", {0}), ("0-3,8", {0, 1, 2, 3, 8}), ("0-1", {0, 1}), (" 2,4-5\n", {2, 4, 5})],
)
def test_parse_cpuset_reads_kernel_lists(text, ids):
    assert parse_cpuset(text) == frozenset(ids)


@pytest.mark.parametrize("text", ["a", "1-", "-1", "3-1", "1,,2", "1 2", "0x3", "1-2-3", "99999999"])
def test_parse_cpuset_refuses_bad_syntax(text):
    with pytest.raises(InvalidValue):
        parse_cpuset(text)


def test_format_cpuset_folds_runs_like_the_kernel():
    assert format_cpuset({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11"
    assert format_cpuset(set()) == ""


def test_format_cpuset_refuses_negative_ids():
    with pytest.raises(InvalidValue):
        format_cpuset({-1})


@settings(max_examples=200)
@given(st.frozensets(st.integers(min_value=0, max_value=4096), max_size=64))
def test_cpuset_round_trip(ids):
    assert parse_cpuset(format_cpuset(ids)) == ids


@settings(max_examples=100)
@given(st.frozensets(st.integers(min_value=0, max_value=300), max_size=64))
def test_cpuset_format_is_canonical(ids):
    text = format_cpuset(ids)
    assert format_cpuset(parse_cpuset(text)) == text
