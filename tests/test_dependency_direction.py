"""Dependencies point one way: koordlet -> {nri, resourceexecutor, system, proto};
resourceexecutor -> system; nri -> proto. Nothing points back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("koordlet", "nri", "proto", "resourceexecutor", "system")
ALLOWED = {
    "koordlet": {"koordlet", "nri", "resourceexecutor", "system", "proto"},
    "resourceexecutor": {"resourceexecutor", "system"},
    "nri": {"nri", "proto"},
    "system": {"system"},
    "proto": {"proto"},
}


def project_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found |= {name.split(".")[0] for name in names if name.split(".")[0] in PACKAGES}
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_only_what_it_may(package):
    offenders = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        extra = project_imports(path) - ALLOWED[package]
        if extra:
            offenders[str(path.relative_to(ROOT))] = sorted(extra)
    assert offenders == {}


def test_the_check_sees_a_forbidden_import(tmp_path):
    sample = tmp_path / "x.py"
    sample.write_text("import os\nfrom koordlet.config import Config\nimport system.host\n")
    assert project_imports(sample) == {"koordlet", "system"}
