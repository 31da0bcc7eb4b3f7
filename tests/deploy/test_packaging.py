"""A non-editable install (make install, the image) holds every module: each source
directory is a package the wheel's package finder sees."""

from __future__ import annotations

from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]


def test_every_source_directory_is_a_package():
    found = set(find_packages(str(ROOT), include=["koordlet*", "nri*", "proto*", "resourceexecutor*", "system*"]))
    with_sources = {str(path.parent.relative_to(ROOT)).replace("/", ".")
                    for top in ("koordlet", "nri", "proto", "resourceexecutor", "system")
                    for path in (ROOT / top).rglob("*.py") if "__pycache__" not in path.parts}
    assert with_sources - found == set()
