"""Fixtures for the system package's tests (the sandbox is reusable by other packages)."""

from tests.system.cgroup_sandbox import cgroup_sandbox_dir  # noqa: F401  (pytest fixture)
