"""The restart race behind test_daemon_crash's flake, made deterministic: the informer said
"synced" with a listing that lacked the runtime's pods (CRI had no socket, NRI had not
synchronized yet), the ORM released every checkpointed allocation, and the pods NRI then
listed were admitted afresh onto other CPUs than the ones the runtime runs them on.
Also: admit_now never answers with CPUs whose checkpoint write is still in flight."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from koordlet.orm.checkpoint import CheckpointStore
from koordlet.orm.module import CHECKPOINT_DIR, OrmModule
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import ContainerState, NodeInfo, PodInfo
from koordlet.topology.policy import PolicyName
from koordlet.util.host_facts import HostFacts
from system.host import Host
from tests.koordlet.orm.helpers import dedicated, layout_of, new_orm
from tests.koordlet.orm.test_module import config_for, dedicated_pod, settle
from tests.system.fake_trees import build_topology_tree


def four_cpus(tmp: Path) -> Host:
    return build_topology_tree(tmp / "root", sockets=1, nodes_per_socket=1, cores_per_node=4, threads_per_core=1)


def running_on(uid: str, cpus: str, state: ContainerState = ContainerState.RUNNING) -> PodInfo:
    """A dedicated pod as NRI Synchronize lists it: running, on the cpuset the runtime holds."""
    pod = dedicated_pod(uid)
    container = pod.containers[0]
    return replace(pod, containers=(replace(container, state=state,
                                            linux=replace(container.linux, cpuset_cpus=cpus)),))


def checkpointed(tmp: Path) -> dict[str, str]:
    return {a.pod_uid: a.result for a in CheckpointStore(tmp / "state" / CHECKPOINT_DIR).load()}


@pytest.mark.parametrize("state", [ContainerState.RUNNING, ContainerState.CREATED, ContainerState.UNKNOWN])
async def test_containers_the_runtime_runs_keep_their_cpus_after_a_release_on_an_empty_listing(
        tmp_path, state: ContainerState) -> None:
    first_states = StaticStates(NodeInfo("n"), [dedicated_pod("a"), dedicated_pod("b")])
    first = OrmModule(config_for(tmp_path), HostFacts(four_cpus(tmp_path)), first_states)
    await first.start()
    await settle(first)
    given = {uid: first.allocations.cpuset_for(uid, "main") for uid in ("a", "b")}
    await first.stop()
    assert given == {"a": {1}, "b": {2}}

    # restart: the informer is synced but lists nothing yet, so the checkpoint is released
    states = StaticStates(NodeInfo("n"))
    second = OrmModule(config_for(tmp_path), HostFacts(four_cpus(tmp_path)), states)
    await second.start()
    try:
        assert second.allocations.entries() == ()
        # NRI Synchronize lists b before a: a fresh admission would give b CPU 1
        states.put(running_on("b", "2", state))
        assert second.allocations.cpuset_for("b", "main") == {2}, "adopted before the hooks decide"
        assert checkpointed(tmp_path) == {"b": "2"}, "adopted durably"
        states.put(running_on("a", "1", state))
        await settle(second)
        assert {uid: second.allocations.cpuset_for(uid, "main") for uid in ("a", "b")} == given
        assert checkpointed(tmp_path) == {"a": "1", "b": "2"}
    finally:
        await second.stop()


async def test_a_runtime_cpuset_held_by_another_allocation_is_not_adopted(tmp_path) -> None:
    states = StaticStates(NodeInfo("n"), [running_on("a", "1")])
    module = OrmModule(config_for(tmp_path), HostFacts(four_cpus(tmp_path)), states)
    await module.start()
    try:
        states.put(running_on("b", "1"))
        await settle(module)
        a, b = (module.allocations.cpuset_for(uid, "main") for uid in ("a", "b"))
        assert a == {1} and b is not None and not b & {0, 1}
    finally:
        await module.stop()


async def test_shared_pool_and_reserved_cpusets_are_not_adopted(tmp_path) -> None:
    states = StaticStates(NodeInfo("n"))
    module = OrmModule(config_for(tmp_path), HostFacts(four_cpus(tmp_path)), states)
    await module.start()
    try:
        states.put(running_on("pool", "1-3"))  # asks 1 CPU, runs on the shared pool
        states.put(running_on("reserved", "0"))
        await settle(module)
        held = {uid: module.allocations.cpuset_for(uid, "main") for uid in ("pool", "reserved")}
        assert all(cpus is not None and len(cpus) == 1 and 0 not in cpus for cpus in held.values())
        assert held["pool"] != held["reserved"]
    finally:
        await module.stop()


async def test_admit_now_does_not_answer_before_a_background_admission_is_durable(tmp_path) -> None:
    state = tmp_path / "state"
    orm = new_orm(layout_of(tmp_path, "2socket-2numa"), PolicyName.SINGLE_NUMA_NODE, {0}, state)
    assert orm.store is not None
    write = orm.store.write_blob
    in_thread = threading.Event()
    release = threading.Event()

    def held_write(blob: bytes, generation: int | None = None) -> bool:
        if threading.current_thread() is not threading.main_thread():
            in_thread.set()
            release.wait(10)
        return write(blob, generation)

    orm.store.write_blob = held_write  # type: ignore[method-assign]
    background = asyncio.create_task(orm.admit(dedicated("p", 1)))
    try:
        await asyncio.to_thread(in_thread.wait, 10)
        assert orm.admitted("p", "c0")
        rows = orm.admit_now(dedicated("p", 1))  # the runtime's CreateContainer for the same pod
        on_disk = CheckpointStore(state).load()
        assert [(a.pod_uid, a.result) for a in on_disk] == [("p", rows[0].result)]
    finally:
        release.set()
        await background
    assert CheckpointStore(state).load() == rows
