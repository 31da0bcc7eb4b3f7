"""The systemd unit: `systemd-analyze verify` accepts it and `security --offline` rates its
exposure at most 5; it names every directory the agent writes and the capability that
standalone eviction needs. The Makefile's install is tested by its dry run."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "koordlet.service"
needs_systemd = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                   reason="systemd-analyze not installed (Debian package systemd)")


def local_unit(tmp_path: Path) -> Path:
    """The unit with ExecStart at this checkout's koordlet (verify checks the binary exists)."""
    koordlet = Path(sys.executable).parent / "koordlet"
    path = tmp_path / "koordlet.service"
    path.write_text(UNIT.read_text().replace("/opt/koordlet/bin/koordlet", str(koordlet)))
    return path


@needs_systemd
def test_systemd_analyze_verify_accepts_the_unit(tmp_path):
    result = subprocess.run(["systemd-analyze", "verify", str(local_unit(tmp_path))],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "koordlet.service" not in result.stderr  # no warning about our unit


@needs_systemd
def test_exposure_stays_at_most_five(tmp_path):
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(local_unit(tmp_path))],
                            capture_output=True, text=True, timeout=60)
    found = re.search(r"Overall exposure level for koordlet.service: ([0-9.]+)", result.stdout + result.stderr)
    assert found is not None, result.stdout + result.stderr
    assert float(found.group(1)) <= 5.0


def test_the_unit_grants_what_the_agent_does():
    text = UNIT.read_text()
    assert "CAP_KILL" in re.search(r"^CapabilityBoundingSet=(.*)$", text, re.M).group(1)  # type: ignore[union-attr]
    writable = set(re.findall(r"^ReadWritePaths=-?(\S+)$", text, re.M))
    assert {"/sys/fs/cgroup", "/var/run/nri", "/var/lib/katalyst/plugin-socks",
            "/var/lib/kubelet/pod-resources", "/sys/fs/resctrl"} <= writable
    assert "EnvironmentFile=-/etc/default/koordlet" in text and "$KOORDLET_ARGS" in text


def test_make_install_is_a_venv_under_opt_the_unit_and_a_kept_env_file():
    result = subprocess.run(["make", "-n", "install", "PYTHON=python3"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    plan = result.stdout
    assert "-m venv /opt/koordlet" in plan and "pip install -q --upgrade '.[fast]'" in plan
    assert "pip install -q --upgrade -e" not in plan  # not editable: the clone may go away
    assert "/etc/systemd/system/koordlet.service" in plan
    assert "test -e /etc/default/koordlet ||" in plan  # an upgrade keeps the operator's flags
