"""take_cpus on random free sets: exactly the count, only free CPUs inside the allowed nodes,
and whole cores whenever whole free cores could cover an even request."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from koordlet.orm.cpu_take import NotEnoughCpus, take_cpus
from tests.koordlet.orm.helpers import layout_of

LAYOUT = layout_of(Path(tempfile.mkdtemp(prefix="orm-take-")), "2socket-4numa-smt")
CPUS = sorted(LAYOUT.cpus)


@settings(max_examples=300, deadline=None)
@given(free=st.frozensets(st.sampled_from(CPUS)), count=st.integers(1, 16),
       nodes=st.one_of(st.none(), st.frozensets(st.sampled_from(LAYOUT.numa_nodes), min_size=1)))
def test_take_is_exact_and_stays_inside(free, count, nodes) -> None:
    allowed = free if nodes is None else free & LAYOUT.cpus_in(nodes)
    node_list = None if nodes is None else tuple(sorted(nodes))
    if len(allowed) < count:
        with pytest.raises(NotEnoughCpus):
            take_cpus(LAYOUT, free, count, node_list)
        return
    taken = take_cpus(LAYOUT, free, count, node_list)
    assert len(taken) == count and taken <= allowed
    whole_free = [core for core in LAYOUT.core_cpus.values() if core <= allowed]
    if count % 2 == 0 and len(whole_free) * 2 >= count:
        assert all(LAYOUT.core_cpus[LAYOUT.core_of[cpu]] <= taken for cpu in taken)
