"""A daemon restart on a host whose CRI socket is absent and whose NRI Synchronize comes
late: the ORM's checkpointed allocations survive until NRI has listed, and then only
the pods NRI did not list are released."""

from __future__ import annotations

import asyncio
from pathlib import Path

from koordlet.orm.module import OrmModule
from koordlet.statesinformer.agent import SPEC as STATES_INFORMER
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo, Source
from koordlet.statesinformer.nri_feed import NriFeed
from koordlet.util.host_facts import HostFacts
from system.host import Host
from tests.koordlet.hubs_helper import hubs_for
from tests.koordlet.orm.test_module import config_for, dedicated_pod, settle
from tests.koordlet.statesinformer.nri_fixtures import container, sandbox, uid_of
from tests.system.fake_trees import build_topology_tree

KEPT, GONE = uid_of(1), uid_of(2)


def roomy_host(tmp: Path) -> Host:
    return build_topology_tree(tmp / "root", sockets=1, nodes_per_socket=1, cores_per_node=4, threads_per_core=1)


async def test_checkpointed_allocations_wait_for_a_late_nri_synchronize(tmp_path: Path) -> None:
    nri_socket = tmp_path / "nri" / "nri.sock"
    nri_socket.parent.mkdir()
    nri_socket.touch()  # the runtime's NRI socket exists: NRI is expected
    config = config_for(tmp_path, "--runtime-hooks-mode", "auto", "--runtime-hooks-nri-socket-path", str(nri_socket),
                        "--cri-endpoint", "unix://%s" % (tmp_path / "absent-cri.sock"),
                        "--states-cri-sync-interval", "10ms")

    # before the restart: two dedicated pods hold CPUs, and the checkpoint says so
    first = OrmModule(config, HostFacts(roomy_host(tmp_path)), StaticStates(NodeInfo("n"), [dedicated_pod(KEPT), dedicated_pod(GONE)]))
    await first.start()
    await settle(first)
    await first.stop()
    held = {e.pod_uid for e in first.allocations.entries()}
    assert held == {KEPT, GONE}

    # after the restart: the daemon's own states informer, CRI absent, NRI not yet synchronized
    hubs = hubs_for(config, facts=HostFacts(roomy_host(tmp_path)))
    (informer,) = STATES_INFORMER.build(hubs).modules
    assert hubs.states.expected == {Source.NRI}
    second = OrmModule(config, hubs.facts, hubs.states)
    await informer.start()
    await second.start()
    try:
        for _ in range(5):  # several failed CRI polls and reconcile rounds
            await asyncio.sleep(0.03)
            await second.reconcile_once()
            await settle(second)
        assert not informer.ready()
        assert {e.pod_uid for e in second.allocations.entries()} == {KEPT, GONE}

        kept = sandbox(1, tier="guaranteed")
        NriFeed(hubs.states).nri_synchronized([kept], [container(kept, "c1")])
        assert informer.ready()
        await second.reconcile_once()
        await settle(second)
        assert {e.pod_uid for e in second.allocations.entries()} == {KEPT}
    finally:
        await second.stop()
        await informer.stop()
