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


FIRST_PARTY = {"koordlet", "nri", "proto", "resourceexecutor", "system"}
# import name -> distribution name, where they differ
DISTRIBUTIONS = {"yaml": "pyyaml", "google": "protobuf", "grpc": "grpcio", "grpc_tools": "grpcio-tools",
                 "prometheus_client": "prometheus-client"}


def declared() -> dict[str, set[str]]:
    """Distribution names by where setup.cfg declares them: "install" or an extra's name."""
    import configparser
    import re

    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")

    def names(text: str) -> set[str]:
        return {re.split(r"[<>=!~\[ ;]", line.strip(), maxsplit=1)[0].lower()
                for line in text.splitlines() if line.strip() and not line.strip().startswith("#")}

    out = {"install": names(parser["options"]["install_requires"])}
    out.update({extra: names(text) for extra, text in parser["options.extras_require"].items()})
    return out


def third_party_imports() -> dict[str, set[str]]:
    """Top-level third-party module -> the shipped files importing it (at any depth)."""
    import ast
    import sys

    found: dict[str, set[str]] = {}
    for top in sorted(FIRST_PARTY):
        for path in (ROOT / top).rglob("*.py"):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
                for module in modules:
                    head = module.split(".")[0]
                    if head not in FIRST_PARTY and head not in sys.stdlib_module_names and not head.startswith("_"):
                        found.setdefault(head, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_imported_third_party_package_is_declared():
    """In install_requires, or (imported only where the feature is optional) in the extra
    that feature names: kube for the API client, fast for uvloop."""
    where = declared()
    everywhere = set().union(*where.values())
    missing = {module: sorted(files) for module, files in third_party_imports().items()
               if DISTRIBUTIONS.get(module, module).lower() not in everywhere}
    assert missing == {}


def test_the_daemon_requires_nothing_it_does_not_import():
    imported = {DISTRIBUTIONS.get(module, module).lower() for module in third_party_imports()}
    assert declared()["install"] - imported == set()
