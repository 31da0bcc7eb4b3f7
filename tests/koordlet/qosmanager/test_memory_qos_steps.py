"""Memory QoS's pass over many pods gives the event loop back between steps, and the
values it writes in steps are the ones one batch would write."""

from __future__ import annotations

from koordlet.qosmanager.memory_qos import MemoryQoS
from koordlet.util.steps import PODS_PER_STEP
from tests.koordlet.qosmanager.helpers import loop_turns_during
from tests.koordlet.qosmanager.test_peer_fidelity import LS_MIN_100, GiB, ls_pod, memory_rig
from tests.koordlet.qosmanager.test_strategies_fake_trees import read


def test_a_full_pass_over_many_pods_runs_in_steps_and_writes_every_value(tmp_path):
    uids = ["ls%d" % i for i in range(2 * PODS_PER_STEP + 5)]
    rig = memory_rig(tmp_path, LS_MIN_100, *(ls_pod(uid) for uid in uids))
    turns = loop_turns_during(lambda: MemoryQoS().run(rig.ctx))
    assert turns >= 3  # three steps of pods, after the tiers
    for uid in uids:
        assert read(rig.host, "", f"kubepods/burstable/pod{uid}", "memory.min") == str(GiB)
        assert read(rig.host, "", f"kubepods/burstable/pod{uid}/c0", "memory.min") == str(GiB)
    for tier in ("kubepods", "kubepods/burstable"):
        assert read(rig.host, "", tier, "memory.min") == str(len(uids) * GiB)
    rig.close()
