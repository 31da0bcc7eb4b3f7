"""tests.promtool: koordlet's millisecond names pass, every other note and a parse error do not."""

from __future__ import annotations

import shutil

import pytest

from tests.promtool import KOORDLET_NAMES_IN_MILLISECONDS, promtool_problems

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian package prometheus)")


def histogram(name: str) -> bytes:
    return ("# HELP {0} h\n# TYPE {0} histogram\n{0}_bucket{{le=\"1.0\"}} 1\n{0}_bucket{{le=\"+Inf\"}} 1\n"
            "{0}_sum 0.5\n{0}_count 1\n").format(name).encode()


def test_koordlets_own_millisecond_histograms_pass():
    assert promtool_problems(b"".join(histogram(name) for name in KOORDLET_NAMES_IN_MILLISECONDS)) == []


def test_another_name_in_milliseconds_is_a_problem():
    (problem,) = promtool_problems(histogram("koordlet_new_thing_duration_milliseconds"))
    assert "koordlet_new_thing_duration_milliseconds" in problem


def test_a_body_promtool_cannot_parse_is_a_problem():
    (problem,) = promtool_problems(b"# TYPE x counter\nx{ 1\n")
    assert problem.startswith("promtool exited 1")
