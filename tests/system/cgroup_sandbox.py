"""A uniquely named real cgroup for real-kernel tests, always removed afterwards.

    with cgroup_sandbox(controllers=("cpu", "cpuset", "memory"), unified=True) as name:
        ...  # "<root>/<controller>/<name>" and "<root>/unified/<name>" exist

v1 cpuset cgroups start with empty cpuset.cpus/mems; the sandbox copies the parent's so
that processes can be attached. Cleanup removes children first, moves any process still
inside back to the hierarchy root (it kills nothing), and retries rmdir on EBUSY.
Use ``make_child`` for nested cgroups. Pytest users take the ``cgroup_sandbox_dir`` fixture
(import it into a conftest) or call ``cgroup_sandbox`` with ``pytest.skip`` on
``SandboxUnavailable``.
"""

from __future__ import annotations

import errno
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from system.host import Host

PREFIX = "koordlet-test"
DEFAULT_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory")


class SandboxUnavailable(Exception):
    """This machine cannot give the sandbox asked for; the message says why."""


def _roots(host: Host, controllers: Iterable[str], unified: bool) -> list[Path]:
    if os.geteuid() != 0:
        raise SandboxUnavailable("real cgroup tests need root")
    roots = []
    for name in controllers:
        root = host.cgroup(name)
        if not (root / "cgroup.procs").is_file() or (root / "cgroup.controllers").exists():
            raise SandboxUnavailable("no v1 %s hierarchy at %s" % (name, root))
        roots.append(root)
    if unified:
        root = host.cgroup("unified")
        if not (root / "cgroup.controllers").is_file():
            raise SandboxUnavailable("no cgroup2 hierarchy at %s" % root)
        roots.append(root)
    return roots


def _prepare(directory: Path) -> None:
    """Fill a new v1 cpuset cgroup's cpus/mems from its parent."""
    for key in ("cpuset.cpus", "cpuset.mems"):
        own = directory / key
        if own.is_file() and own.read_text().strip() == "":
            own.write_text((directory.parent / key).read_text().strip())


def make_child(host: Host, relative: str, roots: Iterable[Path]) -> None:
    """Create ``relative`` (below a sandbox) in each of ``roots``; cpusets get filled."""
    for root in roots:
        directory = root / relative
        directory.mkdir()
        _prepare(directory)


def _evacuate(directory: Path, root: Path) -> None:
    try:
        pids = (directory / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in pids:
        try:
            (root / "cgroup.procs").write_text(pid)
        except OSError:
            pass  # exited meanwhile


def remove_tree(directory: Path, root: Path, attempts: int = 50) -> None:
    """rmdir a cgroup and its children (deepest first), retrying while the kernel is busy."""
    if not directory.is_dir():
        return
    for child in sorted((p for p in directory.iterdir() if p.is_dir()), reverse=True):
        remove_tree(child, root, attempts)
    for attempt in range(attempts):
        _evacuate(directory, root)
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or attempt == attempts - 1:
                raise
            time.sleep(0.02)


@contextmanager
def cgroup_sandbox(
    controllers: Iterable[str] = DEFAULT_CONTROLLERS,
    unified: bool = True,
    host: Host | None = None,
    prefix: str = PREFIX,
) -> Iterator[str]:
    """Yield a fresh relative cgroup name present in each chosen hierarchy; remove it after."""
    host = host or Host()
    roots = _roots(host, controllers, unified)
    name = "%s-%s" % (prefix, uuid.uuid4().hex[:8])
    created: list[Path] = []
    try:
        for root in roots:
            (root / name).mkdir()
            created.append(root)
            _prepare(root / name)
        yield name
    finally:
        errors = []
        for root in created:
            try:
                remove_tree(root / name, root)
            except OSError as exc:  # keep cleaning the others, then report
                errors.append(exc)
        if errors:
            raise errors[0]


@pytest.fixture
def cgroup_sandbox_dir() -> Iterator[str]:
    """Pytest fixture: a sandbox in cpu, cpuacct, cpuset, memory and unified (or a skip)."""
    try:
        with cgroup_sandbox() as name:
            yield name
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
