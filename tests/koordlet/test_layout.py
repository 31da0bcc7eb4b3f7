"""The shape of koordlet/ that the map promises (docs/ARCHITECTURE.md): one composition
root nothing imports, a short top level, agents that meet only through the hubs' packages,
no package cycles, and the one registry the daemon iterates."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from koordlet.agent import AgentSpec
from koordlet.agents import AGENTS

ROOT = Path(__file__).resolve().parents[2]
KOORDLET = ROOT / "koordlet"
AGENT_PACKAGES = ("metricsadvisor", "orm", "qosmanager", "reporter", "runtimehooks", "statesinformer", "slo")
# what agents may import besides themselves: the hubs' packages, shared building blocks, libraries
SHARED = {"agent", "hubs", "apis", "config", "util", "server", "metrics", "ports", "statesinformer",
          "metriccache", "slo", "topology"}


def koordlet_imports(path: Path) -> set[str]:
    """The koordlet modules `path` imports (dotted, without the leading `koordlet.`)."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found |= {name.removeprefix("koordlet.") for name in names if name.startswith("koordlet.")}
    return found


def modules() -> dict[str, set[str]]:
    return {str(path.relative_to(KOORDLET)): koordlet_imports(path) for path in sorted(KOORDLET.rglob("*.py"))}


def test_nothing_below_the_root_imports_the_daemon_package():
    offenders = {name: sorted(i for i in imports if i.startswith("daemon"))
                 for name, imports in modules().items()
                 if not name.startswith("daemon/") and name != "__main__.py"
                 and any(i.startswith("daemon") for i in imports)}
    assert offenders == {}


def test_the_top_level_holds_at_most_six_modules_besides_packages():
    top = sorted(p.name for p in KOORDLET.glob("*.py"))
    assert len(top) <= 6, top


@pytest.mark.parametrize("package", AGENT_PACKAGES)
def test_an_agent_imports_only_the_shared_packages(package):
    allowed = SHARED | {package}
    offenders = {name: sorted({i.split(".")[0] for i in imports} - allowed)
                 for name, imports in modules().items()
                 if name.startswith(package + "/") and {i.split(".")[0] for i in imports} - allowed}
    assert offenders == {}


def test_no_two_koordlet_packages_import_each_other():
    edges: dict[str, set[str]] = defaultdict(set)
    for name, imports in modules().items():
        if "/" not in name:
            continue
        here = name.split("/")[0]
        for imported in imports:
            there = imported.split(".")[0]
            if there != here and (KOORDLET / there).is_dir():
                edges[here].add(there)
    cycles = sorted((a, b) for a in edges for b in edges[a] if a < b and a in edges.get(b, set()))
    assert cycles == []


def test_every_agent_package_exports_its_spec_and_the_registry_holds_each_once():
    assert all(isinstance(spec, AgentSpec) for spec in AGENTS)
    names = [spec.name for spec in AGENTS]
    assert len(names) == len(set(names))
    for package in AGENT_PACKAGES:
        assert (KOORDLET / package / "agent.py").is_file(), package


def test_the_check_sees_an_import_of_the_root(tmp_path):
    sample = tmp_path / "x.py"
    sample.write_text("from koordlet.daemon.wiring import build_daemon\nimport koordlet.hubs\n")
    assert koordlet_imports(sample) == {"daemon.wiring", "daemon.wiring.build_daemon", "hubs"}
