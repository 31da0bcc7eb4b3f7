"""key_value_of: one key of a flat-keyed cgroup file, agreeing with the full parser."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from system.cgroup_codecs import format_key_values, key_value_of, parse_key_values
from system.errors import InvalidValue
from tests.system.fake_trees import V1_MEMORY_STAT, V2_MEMORY_STAT

_keys = st.from_regex(r"[a-z][a-z_]{0,24}", fullmatch=True)


@given(st.dictionaries(_keys, st.integers(0, 2**63 - 1), min_size=1, max_size=40), st.data())
def test_agrees_with_the_full_parser(table, data):
    text = format_key_values(table)
    key = data.draw(st.sampled_from(sorted(table)))
    assert key_value_of(text, key) == parse_key_values(text)[key]


def test_a_key_that_ends_another_key_is_not_confused():
    # "inactive_file" is a suffix of v1's "total_inactive_file" (listed after it here)
    text = "total_inactive_file 4096\ninactive_file 1024\n"
    assert key_value_of(text, "inactive_file") == 1024
    assert key_value_of(text, "total_inactive_file") == 4096
    assert key_value_of("total_inactive_file 7\n", "total_inactive_file") == 7


def test_kernel_layouts():
    assert key_value_of(V1_MEMORY_STAT, "total_inactive_file") == 4096
    assert key_value_of(V2_MEMORY_STAT, "inactive_file") == 4096
    assert key_value_of("usage_usec 12\nuser_usec 3", "user_usec") == 3  # no final newline


def test_missing_or_bad_key_is_invalid():
    with pytest.raises(InvalidValue):
        key_value_of("total_inactive_file 4096\n", "inactive_file")
    with pytest.raises(InvalidValue):
        key_value_of("", "inactive_file")
    with pytest.raises(InvalidValue):
        key_value_of("inactive_file many\n", "inactive_file")
