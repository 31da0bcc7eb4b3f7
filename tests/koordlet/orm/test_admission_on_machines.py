"""Admission end to end (topology manager + built-in providers) on the machines the issue
names, for every policy, including requests no placement can satisfy."""

from __future__ import annotations

import pytest

from koordlet.orm.manager import AdmissionError
from koordlet.topology.policy import PolicyName
from tests.koordlet.orm.helpers import GiB, dedicated, layout_of, new_orm, shared

ALL_POLICIES = list(PolicyName)


# ------------------------------------------------------------ 1 socket / 1 NUMA (this machine)

@pytest.mark.parametrize("policy", ALL_POLICIES)
async def test_one_numa_one_dedicated_cpu_then_unsatisfiable(tmp_path, policy) -> None:
    layout = layout_of(tmp_path, "1socket-1numa")  # CPUs 0-1
    orm = new_orm(layout, policy, reserved={0})
    await orm.admit(dedicated("a", 1))
    assert orm.allocations.cpuset_for("a", "c0") == {1}
    assert orm.allocations.shared_pool() == {0}
    with pytest.raises(AdmissionError, match="pod-b container c0: .*(no NUMA placement has room|0 free)"):
        await orm.admit(dedicated("b", 1))
    assert orm.allocations.cpuset_for("b", "c0") is None
    assert "b" in orm.rejections


async def test_shared_pods_get_no_allocation(tmp_path) -> None:
    orm = new_orm(layout_of(tmp_path, "1socket-1numa"), PolicyName.SINGLE_NUMA_NODE)
    assert await orm.admit(shared("s")) == ()
    assert orm.allocations.cpuset_for("s", "c0") is None


# ------------------------------------------------------------ 2 sockets / 2 NUMA

async def test_single_numa_node_rejects_a_request_larger_than_a_node(tmp_path) -> None:
    orm = new_orm(layout_of(tmp_path, "2socket-2numa"), PolicyName.SINGLE_NUMA_NODE)  # 4 CPUs/node
    with pytest.raises(AdmissionError, match=r"single-numa-node cannot place cpu=6000 \(cpu: room on \[0,1\];"):
        await orm.admit(dedicated("big", 6))


@pytest.mark.parametrize("policy", [PolicyName.RESTRICTED, PolicyName.BEST_EFFORT, PolicyName.NUMERIC])
async def test_a_request_that_needs_two_nodes_spans_both_where_allowed(tmp_path, policy) -> None:
    layout = layout_of(tmp_path, "2socket-2numa")
    orm = new_orm(layout, policy)
    await orm.admit(dedicated("big", 6))
    cpus = orm.allocations.cpuset_for("big", "c0")
    assert len(cpus) == 6 and cpus & layout.node_cpus[0] and cpus & layout.node_cpus[1]


async def test_restricted_rejects_when_only_a_wider_than_needed_placement_is_left(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-2numa")
    orm = new_orm(layout, PolicyName.RESTRICTED)
    await orm.admit(dedicated("a", 3))
    await orm.admit(dedicated("b", 3))  # one free CPU left on each node
    with pytest.raises(AdmissionError, match="restricted"):
        await orm.admit(dedicated("c", 2))


async def test_best_effort_admits_the_same_request_across_nodes(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-2numa")
    orm = new_orm(layout, PolicyName.BEST_EFFORT)
    await orm.admit(dedicated("a", 3))
    await orm.admit(dedicated("b", 3))
    await orm.admit(dedicated("c", 2))
    assert len(orm.allocations.cpuset_for("c", "c0")) == 2


async def test_numa_bound_memory_follows_the_cpus(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-2numa")
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE)
    await orm.admit(dedicated("a", 2, 3 * GiB, numa_binding=True))
    cpus = orm.allocations.cpuset_for("a", "c0")
    mems = orm.allocations.mems_for("a", "c0")
    assert len(mems) == 1 and cpus <= layout.node_cpus[min(mems)]


async def test_memory_that_does_not_fit_one_node_is_rejected_by_single_numa_node(tmp_path) -> None:
    orm = new_orm(layout_of(tmp_path, "2socket-2numa"), PolicyName.SINGLE_NUMA_NODE)  # 4 GiB per node
    with pytest.raises(AdmissionError, match="memory"):
        await orm.admit(dedicated("a", 1, 6 * GiB, numa_binding=True))


async def test_numeric_aligns_cpu_and_memory(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-2numa")
    orm = new_orm(layout, PolicyName.NUMERIC)
    await orm.admit(dedicated("a", 4, 1 * GiB, numa_binding=True))
    await orm.admit(dedicated("b", 2, 1 * GiB, numa_binding=True))
    a_mems, b_mems = orm.allocations.mems_for("a", "c0"), orm.allocations.mems_for("b", "c0")
    assert a_mems != b_mems
    assert orm.allocations.cpuset_for("b", "c0") <= layout.node_cpus[min(b_mems)]


# ------------------------------------------------------------ 2 sockets / 4 NUMA with SMT

async def test_smt_whole_cores_within_one_node(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-4numa-smt")
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE, reserved={0})
    await orm.admit(dedicated("a", 2))
    cpus = orm.allocations.cpuset_for("a", "c0")
    assert cpus in set(layout.core_cpus.values())
    assert 0 not in cpus


async def test_numa_exclusive_takes_whole_nodes_and_keeps_others_out(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-4numa-smt")
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE)
    await orm.admit(dedicated("x", 2, 1 * GiB, numa_binding=True, numa_exclusive=True))
    (node,) = orm.allocations.mems_for("x", "c0")
    assert orm.allocations.cpuset_for("x", "c0") == layout.node_cpus[node]
    for i in range(3):
        await orm.admit(dedicated("o%d" % i, 4))
        assert not orm.allocations.cpuset_for("o%d" % i, "c0") & layout.node_cpus[node]
    with pytest.raises(AdmissionError):
        await orm.admit(dedicated("late", 1))


async def test_each_container_of_a_pod_gets_its_own_cpus(tmp_path) -> None:
    orm = new_orm(layout_of(tmp_path, "2socket-4numa-smt"), PolicyName.SINGLE_NUMA_NODE)
    await orm.admit(dedicated("p", 2, containers=2))
    c0, c1 = orm.allocations.cpuset_for("p", "c0"), orm.allocations.cpuset_for("p", "c1")
    assert len(c0) == len(c1) == 2 and not c0 & c1


# ------------------------------------------------------------ 8 NUMA

@pytest.mark.parametrize("policy", [PolicyName.SINGLE_NUMA_NODE, PolicyName.RESTRICTED, PolicyName.BEST_EFFORT])
async def test_eight_nodes_fill_one_pod_per_node_then_reject(tmp_path, policy) -> None:
    layout = layout_of(tmp_path, "8numa")  # 4 CPUs per node
    orm = new_orm(layout, policy)
    nodes_used = set()
    for i in range(8):
        await orm.admit(dedicated("p%d" % i, 4))
        cpus = orm.allocations.cpuset_for("p%d" % i, "c0")
        (node,) = {layout.node_of[c] for c in cpus}
        nodes_used.add(node)
    assert nodes_used == set(range(8))
    with pytest.raises(AdmissionError):
        await orm.admit(dedicated("ninth", 1))


async def test_release_makes_cpus_available_again(tmp_path) -> None:
    layout = layout_of(tmp_path, "1socket-1numa")
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE, reserved={0})
    await orm.admit(dedicated("a", 1))
    await orm.remove_pod("a")
    await orm.admit(dedicated("b", 1))
    assert orm.allocations.cpuset_for("b", "c0") == {1}


async def test_admission_is_idempotent(tmp_path) -> None:
    orm = new_orm(layout_of(tmp_path, "2socket-2numa"), PolicyName.SINGLE_NUMA_NODE)
    first = await orm.admit(dedicated("a", 2))
    assert await orm.admit(dedicated("a", 2)) == first
    assert len(orm.allocations.online_cpus - orm.allocations.shared_pool()) == 2


async def test_reserved_cpus_must_be_online(tmp_path) -> None:
    with pytest.raises(ValueError, match="not online"):
        new_orm(layout_of(tmp_path, "1socket-1numa"), PolicyName.NONE, reserved={7})


async def test_pod_scope_places_every_container_on_the_pods_node(tmp_path) -> None:
    from koordlet.orm.manager import Orm
    from koordlet.topology.manager import Scope
    from koordlet.topology.policy import new_policy

    layout = layout_of(tmp_path, "2socket-4numa-smt")  # 4 CPUs per node
    orm = Orm(layout, frozenset(), new_policy(PolicyName.SINGLE_NUMA_NODE, layout.numa_nodes), None, Scope.POD)
    await orm.admit(dedicated("p", 2, containers=2))
    both = orm.allocations.cpuset_for("p", "c0") | orm.allocations.cpuset_for("p", "c1")
    assert len(both) == 4 and len({layout.node_of[c] for c in both}) == 1
    with pytest.raises(AdmissionError, match="cannot place the pod"):
        await orm.admit(dedicated("wide", 3, containers=2))  # 6 CPUs: no single node holds the pod


async def test_this_machines_real_topology(tmp_path) -> None:
    from koordlet.orm.cpu_layout import CpuLayout
    from system.host import Host
    from system.topology import read_cpu_topology

    layout = CpuLayout.of(read_cpu_topology(Host()))
    if len(layout.cpus) < 2:
        pytest.skip("needs two online CPUs")
    reserved = min(layout.cpus)
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE, reserved={reserved})
    await orm.admit(dedicated("a", 1))
    (cpu,) = orm.allocations.cpuset_for("a", "c0")
    assert cpu != reserved and cpu not in orm.allocations.shared_pool()


def _only(pod, *names):
    from koordlet.topology.request import PodRequest

    return PodRequest(pod.pod_uid, pod.pod_namespace, pod.pod_name,
                      tuple(c for c in pod.containers if c.container_name in names))


async def test_containers_arriving_one_by_one_are_admitted_one_by_one(tmp_path) -> None:
    """NRI mode: CreateContainer brings one container at a time; earlier ones keep their CPUs."""
    layout = layout_of(tmp_path, "2socket-4numa-smt")
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE)
    pod = dedicated("p", 2, containers=3)
    await orm.admit(_only(pod, "c0"))
    first = orm.allocations.cpuset_for("p", "c0")
    await orm.admit(_only(pod, "c0", "c1"))
    assert orm.allocations.cpuset_for("p", "c0") == first
    assert len(orm.allocations.cpuset_for("p", "c1")) == 2
    assert orm.allocations.cpuset_for("p", "c2") is None
    await orm.admit(pod)
    held = [orm.allocations.cpuset_for("p", c) for c in ("c0", "c1", "c2")]
    assert len(frozenset().union(*held)) == 6


async def test_a_rejected_later_container_leaves_the_earlier_ones_allocated(tmp_path) -> None:
    layout = layout_of(tmp_path, "1socket-1numa")
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE, reserved={0})
    pod = dedicated("p", 1, containers=2)
    await orm.admit(_only(pod, "c0"))
    with pytest.raises(AdmissionError, match="container c1"):
        await orm.admit(pod)
    assert orm.allocations.cpuset_for("p", "c0") == {1}
    assert orm.allocations.cpuset_for("p", "c1") is None
    await orm.remove_pod("p")
    assert orm.allocations.shared_pool() == {0, 1}


async def test_best_effort_never_hands_a_numa_exclusive_pod_someone_elses_node(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-4numa-smt")  # 4 nodes of 4 CPUs
    orm = new_orm(layout, PolicyName.BEST_EFFORT)
    for i in range(3):
        await orm.admit(dedicated("o%d" % i, 1))  # packs into nodes, leaving some untouched
    taken_nodes = {layout.node_of[c] for i in range(3) for c in orm.allocations.cpuset_for("o%d" % i, "c0")}
    await orm.admit(dedicated("x", 2, numa_binding=True, numa_exclusive=True))
    x = orm.allocations.cpuset_for("x", "c0")
    assert {layout.node_of[c] for c in x}.isdisjoint(taken_nodes)
    assert x == layout.cpus_in({layout.node_of[c] for c in x})


async def test_admit_now_decides_without_waiting(tmp_path) -> None:
    from koordlet.orm.checkpoint import CheckpointStore

    layout = layout_of(tmp_path, "1socket-1numa")
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE, reserved={0}, state=tmp_path / "state")
    changes = []
    orm.on_change(lambda: changes.append(orm.allocations.shared_pool()))
    (row,) = orm.admit_now(dedicated("a", 1))
    assert row.result == "1" and changes == [{0}]
    assert [r.result for r in CheckpointStore(tmp_path / "state").load()] == ["1"]  # durable before returning
    with pytest.raises(AdmissionError, match="pod-b"):
        orm.admit_now(dedicated("b", 1))


async def test_admit_now_runs_between_the_steps_of_an_admission_in_flight(tmp_path) -> None:
    """A synchronous NRI admission while an async one waits on its checkpoint write: both
    land, neither double-books, and the checkpoint ends with both."""
    import asyncio

    from koordlet.orm.checkpoint import CheckpointStore

    layout = layout_of(tmp_path, "2socket-2numa")
    orm = new_orm(layout, PolicyName.SINGLE_NUMA_NODE, state=tmp_path / "state")
    slow = asyncio.create_task(orm.admit(dedicated("a", 2)))
    while not orm.allocations.cpuset_for("a", "c0"):
        await asyncio.sleep(0)  # until "a" is allocated and its checkpoint is being written
    orm.admit_now(dedicated("b", 2))
    await slow
    a, b = orm.allocations.cpuset_for("a", "c0"), orm.allocations.cpuset_for("b", "c0")
    assert len(a) == len(b) == 2 and not a & b
    assert {r.pod_uid for r in CheckpointStore(tmp_path / "state").load()} == {"a", "b"}
