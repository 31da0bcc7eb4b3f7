"""Random admit/release sequences: no CPU is ever held twice, reserved CPUs are never
handed out, and the checkpoint restores exactly the same state."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from koordlet.orm.checkpoint import CheckpointStore
from koordlet.orm.manager import AdmissionError
from koordlet.topology.policy import PolicyName
from tests.koordlet.orm.helpers import GiB, dedicated, layout_of, new_orm

_LAYOUT_DIR = Path(tempfile.mkdtemp(prefix="orm-prop-"))
LAYOUT = layout_of(_LAYOUT_DIR, "2socket-4numa-smt")  # 16 CPUs, 4 nodes; read once

admit_op = st.tuples(st.just("admit"), st.integers(1, 6), st.integers(0, 3), st.booleans(), st.booleans())
release_op = st.tuples(st.just("release"), st.integers(0, 40))
operations = st.lists(st.one_of(admit_op, release_op), min_size=1, max_size=40)


def check_invariants(orm, reserved) -> None:
    entries = orm.table.entries()
    seen: set[int] = set()
    for entry in entries:
        assert not entry.cpus & seen, "cpu held twice"
        assert not entry.cpus & reserved, "reserved cpu handed out"
        seen |= entry.cpus
    assert orm.allocations.shared_pool() == LAYOUT.cpus - seen
    free_mem = orm.builtins[1].free_by_node()
    assert all(v >= 0 for v in free_mem.values()), "memory over-committed on a node"


async def run(ops, policy, reserved, state: Path) -> None:
    orm = new_orm(LAYOUT, policy, reserved=reserved, state=state)
    admitted: list[str] = []
    for index, op in enumerate(ops):
        if op[0] == "admit":
            _, cpus, mem_gib, binding, exclusive = op
            uid = "p%d" % index
            try:
                await orm.admit(dedicated(uid, cpus, mem_gib * GiB, numa_binding=binding,
                                          numa_exclusive=binding and exclusive))
                admitted.append(uid)
            except AdmissionError:
                assert orm.table.for_pod(uid) == ()
        elif admitted:
            await orm.remove_pod(admitted.pop(op[1] % len(admitted)))
        check_invariants(orm, reserved)
    restarted = new_orm(LAYOUT, policy, reserved=reserved, state=state)
    restarted.restore(CheckpointStore(state).load())
    assert restarted.table.entries() == orm.table.entries()
    assert restarted.allocations.shared_pool() == orm.allocations.shared_pool()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations,
       policy=st.sampled_from([PolicyName.SINGLE_NUMA_NODE, PolicyName.BEST_EFFORT, PolicyName.NUMERIC,
                               PolicyName.NONE, PolicyName.RESTRICTED]),
       reserved=st.frozensets(st.sampled_from(sorted(LAYOUT.cpus)), max_size=3))
def test_random_admit_release_sequences_keep_the_books(ops, policy, reserved) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(ops, policy, reserved, Path(tmp)))
