"""Every name in the resource table and in the fake trees is one the kernel documents.

The fake trees are the only witness for cgroup v2 controllers on this machine, so they
and the registry are both checked against tests/system/kernel_files.py (written from
the kernel's documentation, not from the code): a misspelt file (pids.limit for
pids.max, memory.oom_group for memory.oom.group) fails here."""

import pytest

from system.cgroup_resource import REGISTRY, SupportCheck
from system.cgroup_version import V1_TO_V2_CONTROLLER
from tests.system import fake_trees
from tests.system.kernel_files import (
    V2_CORE,
    VENDOR_V1_FILES,
    VENDOR_V2_FILES,
    v1_documented,
    v2_documented,
)

NAMES = sorted(REGISTRY)


def _documented(name, version):
    """(file name, upstream names, vendor names) for the resource on that version."""
    res = REGISTRY[name]
    if version == 1:
        return res.v1_file, v1_documented(res.subsystem), VENDOR_V1_FILES.get(res.subsystem, frozenset())
    controller = V1_TO_V2_CONTROLLER.get(res.subsystem, res.subsystem)
    if controller is None:
        return res.v2_file, frozenset(), frozenset()
    return res.v2_file, v2_documented(controller), VENDOR_V2_FILES.get(controller, frozenset())


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_file_is_documented_for_its_controller(name, version):
    file_name, upstream, vendor = _documented(name, version)
    if file_name is None:
        return
    assert file_name in upstream | vendor, (name, version, file_name)
    if file_name not in upstream:  # vendor-only: never assumed present
        assert REGISTRY[name].support is SupportCheck.FILE_EXISTS, name


def test_core_files_the_registry_trusts_are_core_files():
    from system.cgroup_files import V2_CORE_FILES

    assert V2_CORE_FILES <= V2_CORE


@pytest.mark.parametrize("controller", sorted(fake_trees.V1_FILES))
def test_fake_v1_tree_holds_only_documented_names(controller):
    names = set(fake_trees.V1_FILES[controller])
    assert names <= v1_documented(controller), names - v1_documented(controller)
    vendor = set(fake_trees.V1_ANOLIS_FILES.get(controller, {}))
    assert vendor <= VENDOR_V1_FILES.get(controller, frozenset()) | v1_documented(controller)


@pytest.mark.parametrize("controller", sorted(fake_trees.V2_FILES))
def test_fake_v2_tree_holds_only_documented_names(controller):
    names = set(fake_trees.V2_FILES[controller])
    assert names <= v2_documented(controller), names - v2_documented(controller)
    assert set(fake_trees.V2_CORE) <= V2_CORE
