"""Exclusive CPUs are taken topology first: sockets, NUMA nodes, whole cores, then threads."""

from __future__ import annotations

import pytest

from koordlet.orm.cpu_take import NotEnoughCpus, take_cpus
from tests.koordlet.orm.helpers import layout_of


def test_a_whole_socket_when_the_request_fills_one(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-4numa-smt")  # 8 CPUs per socket
    cpus = take_cpus(layout, layout.cpus, 8)
    assert cpus in set(layout.socket_cpus.values())


def test_a_whole_numa_node_when_the_request_fills_one(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-4numa-smt")  # 4 CPUs per node
    assert take_cpus(layout, layout.cpus, 4) == layout.node_cpus[0]


def test_whole_cores_before_single_threads(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-4numa-smt")
    cpus = take_cpus(layout, layout.cpus, 2)
    assert any(cpus == core for core in layout.core_cpus.values())


def test_an_odd_thread_comes_from_a_half_used_core(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-4numa-smt")
    first = take_cpus(layout, layout.cpus, 1)
    (cpu,) = first
    sibling = layout.core_cpus[layout.core_of[cpu]] - first
    assert take_cpus(layout, layout.cpus - first, 1) == sibling


def test_stays_inside_the_numa_nodes_it_is_given(tmp_path) -> None:
    layout = layout_of(tmp_path, "8numa")
    cpus = take_cpus(layout, layout.cpus, 3, (5,))
    assert cpus <= layout.node_cpus[5] and len(cpus) == 3


def test_packs_into_the_fullest_node(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-4numa-smt")
    used = take_cpus(layout, layout.cpus, 2, (2,))
    nxt = take_cpus(layout, layout.cpus - used, 2)
    assert nxt <= layout.node_cpus[2]


def test_too_few_free_cpus_is_an_error(tmp_path) -> None:
    layout = layout_of(tmp_path, "2socket-2numa")
    with pytest.raises(NotEnoughCpus, match="asked 5 exclusive CPUs, 4 free"):
        take_cpus(layout, layout.cpus, 5, (0,))
