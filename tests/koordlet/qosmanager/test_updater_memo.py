"""QoSContext.updater: one updater per value while asked for, let go once nobody asks."""

from __future__ import annotations

import asyncio

import pytest

from koordlet.qosmanager.framework import UPDATER_MEMO_SECONDS, QoSManager
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.qosmanager.helpers import Clock, Rig
from tests.system.fake_trees import build_v1_tree

LIVE, GONE = "kubepods/besteffort/podlive", "kubepods/besteffort/podgone"


def _memo_sizes(rig: Rig) -> int:
    return len(rig.ctx._updaters) + len(rig.ctx._older_updaters)


@pytest.fixture
def rig(tmp_path):
    """A QoS context whose memo runs on a clock of its own, starting at 0."""
    made = Rig(build_v1_tree(tmp_path), NodeInfo("n"))
    made.ctx.memo_clock = Clock(0.0)
    yield made
    made.close()


def test_an_updater_asked_for_again_is_the_same_object(rig) -> None:
    first = rig.ctx.updater("cpu.shares", LIVE, 2)
    assert rig.ctx.updater("cpu.shares", LIVE, 2) is first
    assert rig.ctx.updater("cpu.shares", LIVE, 3) is not first
    assert rig.ctx.updater("cpu.shares", LIVE, 2.0) is not first  # 2 and 2.0 kept apart


def test_updaters_of_a_gone_cgroup_are_let_go_while_those_asked_for_stay(rig) -> None:
    live = rig.ctx.updater("cpu.shares", LIVE, 2)
    rig.ctx.updater("cpu.shares", GONE, 2)  # its pod goes: nobody asks again
    for step in range(1, 4):  # three turns; the live pod's round asks every 10 s
        for _ in range(int(UPDATER_MEMO_SECONDS // 10)):
            rig.ctx.memo_clock.now += 10
            assert rig.ctx.updater("cpu.shares", LIVE, 2) is live
        rig.ctx.updater("cpu.cfs_quota_us", LIVE, 100000 + step)  # a new value: a miss turns the memo
    keys = set(rig.ctx._updaters) | set(rig.ctx._older_updaters)
    assert all(key[1] == LIVE for key in keys)
    assert _memo_sizes(rig) <= 2  # the live shares and the last quota


def test_the_memo_keeps_one_updater_a_file_under_the_updater_s_own_key(rig) -> None:
    first = rig.ctx.updater("cpu.shares", LIVE, 2)
    (key,) = rig.ctx._updaters
    assert key is first.key  # no key tuple of the memo's own a kept updater
    second = rig.ctx.updater("cpu.shares", LIVE, 3)  # the file's value changed: replaced
    assert second.value == 3 and _memo_sizes(rig) == 1
    assert rig.ctx.updater("cpu.shares", LIVE, 3) is second


def test_a_quiet_node_lets_go_of_a_gone_pod_s_updaters_after_its_rounds(rig) -> None:
    """No new pod, so no round asks for a new updater: the manager turns the memo anyway."""
    rig.ctx.updater("cpu.shares", GONE, 2)
    for _ in range(2):
        rig.ctx.memo_clock.now += UPDATER_MEMO_SECONDS
        asyncio.run(QoSManager._run_one(QuietStrategy(), rig.ctx))
    assert _memo_sizes(rig) == 0


class QuietStrategy:
    name, gate, interval = "quiet", "BECPUSuppress", 1.0

    async def run(self, ctx) -> None:
        return None
