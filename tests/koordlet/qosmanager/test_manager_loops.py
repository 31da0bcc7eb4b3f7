"""The QoS manager's loops: a failing strategy keeps its loop (counted), a dead loop makes
the manager not ready."""

from __future__ import annotations

import asyncio

from koordlet.qosmanager.framework import QoSContext, QoSManager
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.qosmanager.helpers import Rig
from tests.polling import until
from tests.system.fake_trees import build_v1_tree


class Strategy:
    gate = "BECPUSuppress"

    def __init__(self, name: str, error: BaseException | None = None, interval: float = 0.001) -> None:
        self.name, self.error, self.interval = name, error, interval
        self.rounds = 0

    async def run(self, ctx: QoSContext) -> None:
        self.rounds += 1
        if self.error is not None:
            raise self.error


async def test_a_failing_strategy_runs_on_and_is_counted(tmp_path) -> None:
    rig = Rig(build_v1_tree(tmp_path), NodeInfo("n"))
    good, bad = Strategy("good"), Strategy("bad", ValueError("broken round"))
    manager = QoSManager([good, bad], lambda: rig.ctx, rig.registry)
    await manager.start()
    try:
        await until(lambda: bad.rounds >= 3 and good.rounds >= 3)
        assert manager.ready()
        assert rig.metric("koordlet_qos_strategy_rounds_total", strategy="bad", result="failed") >= 3
        assert rig.registry.get_sample_value("koordlet_periodic_errors_total", {"task": "qos-bad"}) >= 3
    finally:
        await manager.stop()
        rig.close()
    assert not manager.ready()


async def test_a_dead_strategy_loop_makes_the_manager_not_ready(tmp_path) -> None:
    class Fatal(BaseException):
        pass

    rig = Rig(build_v1_tree(tmp_path), NodeInfo("n"))
    manager = QoSManager([Strategy("good"), Strategy("fatal", Fatal())], lambda: rig.ctx, rig.registry)
    await manager.start()
    try:
        await until(lambda: not manager.ready())
        await asyncio.sleep(0)
    finally:
        await manager.stop()
        rig.close()
