"""Quantity and duration strings as Kubernetes' Go code prints them (values from the
apimachinery resource.Quantity and time.Duration documentation)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from koordlet.apis.quantity import base_units, milli_cpu
from koordlet.reporter.quantities import cpu_quantity, go_duration, memory_quantity


@pytest.mark.parametrize("cores, text", [(1.5, "1500m"), (2.0, "2"), (0.25, "250m"), (0.0, "0"), (1.0009, "1")])
def test_cpu_is_a_decimal_si_milli_quantity(cores, text):
    assert cpu_quantity(cores) == text


@pytest.mark.parametrize("value, text", [(1073741824, "1Gi"), (1536 * 1024 ** 2, "1536Mi"), (1024, "1Ki"),
                                         (1000, "1000"), (1536, "1536"), (123456789, "123456789"), (0, "0")])
def test_memory_is_a_binary_si_quantity(value, text):
    assert memory_quantity(value) == text


@pytest.mark.parametrize("seconds, text", [(300, "5m0s"), (600, "10m0s"), (1800, "30m0s"), (3600, "1h0m0s"),
                                           (5400, "1h30m0s"), (45, "45s")])
def test_durations_print_like_go(seconds, text):
    assert go_duration(seconds) == text


def test_not_finite_values_are_refused():
    with pytest.raises(ValueError):
        cpu_quantity(float("nan"))
    with pytest.raises(ValueError):
        memory_quantity(float("inf"))


@given(st.integers(min_value=0, max_value=2 ** 50))
def test_memory_strings_parse_back_to_the_same_bytes(value):
    assert base_units(memory_quantity(value)) == value


@given(st.integers(min_value=0, max_value=10 ** 9))
def test_cpu_strings_parse_back_to_the_same_millis(milli):
    assert milli_cpu(cpu_quantity(milli / 1000)) == pytest.approx(milli, abs=1)
