"""No kubepods at all: CPU suppress says so once and stops trying to restore a quota into a
cgroup that is not there (it tried every second, counted as gone, never logged)."""

from __future__ import annotations

from structlog.testing import capture_logs

from koordlet.apis.qos import KoordQoSClass
from koordlet.qosmanager.cpu_suppress import CPUSuppress
from koordlet.slo.spec import parse_node_slo_spec
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.qosmanager.helpers import Rig, pod
from tests.koordlet.qosmanager.test_strategies_fake_trees import run
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import build_v1_tree


def test_a_missing_tier_is_said_once_and_not_written_every_round(tmp_path):
    rig = Rig(build_v1_tree(tmp_path), NodeInfo("n", capacity={"cpu": 4000, "memory": 1 << 30}), io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec({"resourceUsedThresholdWithBE": {"enable": False}}))
    rig.states.put(pod("be1", KoordQoSClass.BE, "kubepods/besteffort/podbe1"))  # known, its cgroups are not
    strategy = CPUSuppress()
    with capture_logs() as logs:
        for _ in range(5):
            run(strategy, rig)
    assert [e["event"] for e in logs].count("cpu_suppress_idle") == 1
    gone = rig.registry.get_sample_value("koordlet_resource_update_total",
                                         {"resource": "cpu.cfs_quota_us", "result": "gone"}) or 0
    assert gone <= 1  # one look, not one write a round
    rig.close()
