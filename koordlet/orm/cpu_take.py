"""Which exclusive CPUs to hand out: topology first, as kubelet's static policy takes them.

Whole sockets while the request still fills one, then whole NUMA nodes, then whole
physical cores (every hyperthread), then single threads, preferring threads whose
sibling is already taken so that whole cores stay free for later requests. Inside
each step the emptiest-already group goes first, so allocations pack instead of
spreading across the machine.
"""

from __future__ import annotations

from collections.abc import Mapping

from koordlet.orm.cpu_layout import CpuLayout


class NotEnoughCpus(Exception):
    """Fewer free CPUs than asked for in the allowed NUMA nodes."""


def _take_whole(groups: Mapping[int, frozenset[int]], free: set[int], need: int, taken: list[int]) -> int:
    for key in sorted(groups, key=lambda k: (min(groups[k]) if groups[k] else 0)):
        group = groups[key]
        if group and len(group) <= need and group <= free:
            taken.extend(sorted(group))
            free -= group
            need -= len(group)
    return need


def take_cpus(layout: CpuLayout, available: frozenset[int], count: int,
              numa_nodes: tuple[int, ...] | None = None, spill: bool = False) -> frozenset[int]:
    """`count` CPUs out of `available`, inside `numa_nodes` (None: anywhere). With `spill`,
    when those nodes hold too few, all of theirs and the rest from the other nodes. Pure."""
    if count <= 0:
        return frozenset()
    if spill and numa_nodes is not None:
        aligned = available & layout.cpus_in(numa_nodes)
        if len(aligned) < count:
            if len(available) < count:
                raise NotEnoughCpus("asked %d exclusive CPUs, %d free" % (count, len(available)))
            first = take_cpus(layout, aligned, len(aligned))
            return first | take_cpus(layout, available - first, count - len(first))
    allowed = available if numa_nodes is None else available & layout.cpus_in(numa_nodes)
    if len(allowed) < count:
        raise NotEnoughCpus("asked %d exclusive CPUs, %d free in NUMA nodes %s"
                            % (count, len(allowed), "any" if numa_nodes is None else list(numa_nodes)))
    free = set(allowed)
    taken: list[int] = []
    need = _take_whole(layout.socket_cpus, free, count, taken)
    if need:
        need = _take_whole(layout.node_cpus, free, need, taken)
    if need:
        need = _take_cores(layout, free, need, taken)
    if need:
        _take_threads(layout, free, need, taken)
    return frozenset(taken)


def _free_in_node(layout: CpuLayout, free: set[int]) -> dict[int, int]:
    counts = dict.fromkeys(layout.node_cpus, 0)
    for cpu in free:
        counts[layout.node_of[cpu]] += 1
    return counts


def _take_cores(layout: CpuLayout, free: set[int], need: int, taken: list[int]) -> int:
    node_free = _free_in_node(layout, free)
    whole = [key for key, threads in layout.core_cpus.items() if threads <= free]
    whole.sort(key=lambda key: (node_free[layout.node_of[min(layout.core_cpus[key])]],
                                min(layout.core_cpus[key])))
    for key in whole:
        threads = layout.core_cpus[key]
        if len(threads) > need:
            break
        taken.extend(sorted(threads))
        free -= threads
        need -= len(threads)
    return need


def _take_threads(layout: CpuLayout, free: set[int], need: int, taken: list[int]) -> None:
    node_free = _free_in_node(layout, free)

    def order(cpu: int) -> tuple[int, int, int]:
        siblings_free = len(layout.core_cpus[layout.core_of[cpu]] & free)
        return (siblings_free, node_free[layout.node_of[cpu]], cpu)

    for cpu in sorted(free, key=order)[:need]:
        taken.append(cpu)
        free.discard(cpu)
