"""TurnReadBack on fake trees: what it keeps per updater, and drift found through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from koordlet.runtimehooks.read_back import TurnReadBack
from resourceexecutor import ResourceExecutor
from system.cgroup_files import CgroupFiles
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import add_cgroup, build_v1_tree, build_v2_tree, set_cgroup_file

PODS = ["kubepods/burstable/pod%d" % i for i in range(5)]


@pytest.mark.parametrize("tree, shared_file", [(build_v1_tree, False), (build_v2_tree, True)])
def test_a_turn_keeps_file_places_only_where_updaters_share_a_file(tmp_path: Path, tree, shared_file) -> None:
    host = tree(tmp_path)
    for pod in PODS:
        add_cgroup(host, pod)
    executor = ResourceExecutor(CgroupFiles(host), io=FakeTreeIO())
    # v2: quota and period are both written to cpu.max
    updaters = [executor.updater(name, pod, value) for pod in PODS
                for name, value in (("cpu.cfs_quota_us", 50000), ("cpu.cfs_period_us", 100000))]
    assert executor.update_batch(updaters).writes > 0
    turn = TurnReadBack((), updaters)
    assert turn.check(executor) == (len(updaters), 0)
    assert (turn._path_of is not None) == shared_file  # v1: one file each, no list of places kept
    set_cgroup_file(host, PODS[-1], "cpu.max" if shared_file else "cpu.cfs_quota_us",
                    "70000 100000" if shared_file else "70000")
    compared, drifted = turn.check(executor)
    assert compared == len(updaters) and drifted == 1  # the quota; v2: the period in cpu.max holds
