"""Fixtures for executor tests: a movable clock, recording IO, fake trees and a
real-kernel cgroup v1 sandbox that always cleans up."""
from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from resourceexecutor.file_io import KernelFileIO
from system.cgroup_files import CgroupFiles
from system.host import Host
from tests.system.cgroup_sandbox import (
    SandboxUnavailable,
    cgroup_sandbox,
    make_child,
    remove_tree,
)
from tests.system.fake_trees import add_cgroup, build_v1_tree, build_v2_tree


class FakeClock:
    """A clock tests move by hand (seconds)."""

    def __init__(self, now: float = 10_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RecordingIO:
    """Delegates to the real file IO and records every read and write, in order."""

    def __init__(self, inner=None) -> None:
        self.inner = inner if inner is not None else KernelFileIO()
        self.writes: list[tuple[str, str]] = []
        self.reads: list[str] = []
        self.before_write = None  # optional hook(path, text) run before each write

    def read(self, path: str) -> str:
        self.reads.append(path)
        return self.inner.read(path)

    def read_many(self, paths):
        self.reads.extend(paths)
        return self.inner.read_many(paths)

    def write(self, path: str, text: str) -> None:
        if self.before_write is not None:
            self.before_write(path, text)
        self.inner.write(path, text)
        self.writes.append((path, text))

    def release(self, path_prefix: str) -> int:
        return self.inner.release(path_prefix)

    def sweep(self) -> int:
        return self.inner.sweep()

    def close(self) -> None:
        self.inner.close()


class FakeTreeIO(KernelFileIO):
    """Regular files lack kernel semantics; emulate the two our tests rely on:
    a write replaces the whole content (kernel files need no O_TRUNC), and a lone
    "$MAX" written to v2 cpu.max keeps the period (Documentation/admin-guide/cgroup-v2.rst)."""

    def write(self, path: str, text: str) -> None:
        if path.endswith("/cpu.max") and len(text.split()) == 1:
            current = self.read(path).split()
            text = "%s %s" % (text, current[1] if len(current) == 2 else "100000")
        if not os.path.isdir(os.path.dirname(path)):
            super().write(path, text)  # raises the typed error
        with open(path, "w") as handle:
            handle.write(text)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def v2_host(tmp_path) -> Host:
    host = build_v2_tree(tmp_path / "v2", cpus="0-3")
    for cgroup_dir in ("kubepods", "kubepods/pod1", "kubepods/pod1/c1", "kubepods/pod1/c2"):
        add_cgroup(host, cgroup_dir)
    return host


@pytest.fixture
def v1_host(tmp_path) -> Host:
    host = build_v1_tree(tmp_path / "v1", cpus="0-3")
    for cgroup_dir in ("kubepods", "kubepods/pod1", "kubepods/pod1/c1", "kubepods/pod1/c2"):
        add_cgroup(host, cgroup_dir)
    return host


# ---------------------------------------------------------------- real kernel

class CgroupSandbox:
    """Nested test cgroups below one system-sandbox cgroup (tests.system.cgroup_sandbox),
    which removes the whole tree afterwards."""

    def __init__(self, top: str, controllers: tuple[str, ...]) -> None:
        self.top = top
        self.host = Host()
        self.roots = [self.host.cgroup(name) for name in controllers]
        self.files = CgroupFiles(self.host)

    def dir(self, *parts: str) -> str:
        return "/".join((self.top,) + parts)

    def make(self, cgroup_dir: str) -> str:
        """mkdir in every sandbox controller; v1 cpusets get the parent's cpus/mems."""
        make_child(self.host, cgroup_dir, self.roots)
        return cgroup_dir

    def remove(self, cgroup_dir: str) -> None:
        for root in self.roots:
            remove_tree(root / cgroup_dir, root)


def kernel_sandbox(controllers: tuple[str, ...]) -> Iterator[CgroupSandbox]:
    try:
        with cgroup_sandbox(controllers=controllers, unified=False) as top:
            yield CgroupSandbox(top, controllers)
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def cpuset_sandbox() -> Iterator[CgroupSandbox]:
    yield from kernel_sandbox(("cpuset",))


@pytest.fixture
def cpu_memory_sandbox() -> Iterator[CgroupSandbox]:
    yield from kernel_sandbox(("cpu", "memory"))
