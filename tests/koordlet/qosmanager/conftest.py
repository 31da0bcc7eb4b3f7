"""Fixtures of the QoS manager tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from system.host import Host
from tests.system.cgroup_sandbox import SandboxUnavailable, cgroup_sandbox, make_child

CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory")
TREE = ("kubepods", "kubepods/besteffort", "kubepods/besteffort/podbe1", "kubepods/besteffort/podbe1/cbe1",
        "kubepods/burstable", "kubepods/burstable/podls1", "kubepods/burstable/podls1/cls1")


@pytest.fixture
def sandbox() -> Iterator[tuple[Host, str]]:
    """A real v1 kubepods tree (one BE pod, one LS pod, a container each) under a fresh
    koordlet-test-<hex8> cgroup in cpu, cpuacct, cpuset and memory; removed afterwards."""
    host = Host()
    try:
        with cgroup_sandbox(CONTROLLERS, unified=False, host=host) as name:
            roots = [host.cgroup(c) for c in CONTROLLERS]
            for relative in TREE:
                make_child(host, f"{name}/{relative}", roots)
            yield host, name
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
