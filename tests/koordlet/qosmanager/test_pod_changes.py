"""Incremental rounds: only new or changed pods, everything on settings change and each minute."""

from __future__ import annotations

import asyncio
import dataclasses

from koordlet.apis.qos import KoordQoSClass
from koordlet.qosmanager.memory_qos import MemoryQoS
from koordlet.qosmanager.pod_changes import PodChanges
from koordlet.slo.spec import parse_node_slo_spec
from koordlet.statesinformer.model import NodeInfo
from tests.koordlet.qosmanager.helpers import Rig, container, pod
from tests.resourceexecutor.conftest import FakeTreeIO
from tests.system.fake_trees import add_cgroup, build_v2_tree, set_cgroup_file

GiB = 1 << 30


def test_select_new_changed_and_full_passes():
    a, b = pod("a", KoordQoSClass.LS), pod("b", KoordQoSClass.BE)
    changes = PodChanges(resync=60)
    assert changes.select([a, b], 0.0, "s1") == ([a, b], True)
    assert changes.select([a, b], 1.0, "s1") == ([], False)
    b2 = dataclasses.replace(b, priority=1)
    c = pod("c", KoordQoSClass.LS)
    assert changes.select([a, b2, c], 2.0, "s1") == ([b2, c], False)
    assert changes.select([a, b2, c], 3.0, "s2") == ([a, b2, c], True)  # settings changed
    assert changes.select([a], 62.0, "s2") == ([], False)
    assert changes.select([a], 63.0, "s2") == ([a], True)  # a minute after the last full pass
    changes.forget()
    assert changes.select([a], 64.0, "s2") == ([a], True)


def test_drift_is_repaired_on_the_full_pass(tmp_path):
    host = build_v2_tree(tmp_path)
    for d in ("kubepods", "kubepods/burstable", "kubepods/burstable/podls1", "kubepods/burstable/podls1/c1"):
        add_cgroup(host, d)
    rig = Rig(host, NodeInfo("n", capacity={"memory": 8 * GiB}), io=FakeTreeIO())
    rig.set_slo(parse_node_slo_spec({"resourceQOSStrategy": {"lsClass": {"memoryQOS": {
        "enable": True, "minLimitPercent": 100}}}}))
    rig.states.put(pod("ls1", KoordQoSClass.LS, "kubepods/burstable/podls1", containers=(
        container("c1", "ls1", "kubepods/burstable/podls1/c1", requests={"memory": GiB}),)))
    strategy = MemoryQoS()
    asyncio.run(strategy.run(rig.ctx))
    path = host.cgroup("kubepods/burstable/podls1/c1", "memory.min")
    assert path.read_text() == str(GiB)
    set_cgroup_file(host, "kubepods/burstable/podls1/c1", "memory.min", "0")  # someone else writes
    rig.clock.now += 30
    asyncio.run(strategy.run(rig.ctx))
    assert path.read_text() == "0"  # unchanged pod, no full pass yet
    rig.clock.now += 31
    asyncio.run(strategy.run(rig.ctx))
    assert path.read_text() == str(GiB)
    rig.close()
