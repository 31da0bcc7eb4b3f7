import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system.errors import InvalidValue, NotSupported
from system.host import Host
from system.resctrl import (
    L3Cat,
    detect_resctrl,
    format_schemata,
    parse_schemata,
)
from system.topology import parse_node_distances, parse_node_meminfo, read_cpu_topology
from tests.system.fake_trees import (
    build_proc_tree,
    build_resctrl_tree,
    build_topology_tree,
    write_file,
)


@pytest.fixture
def two_socket(tmp_path):
    return read_cpu_topology(build_topology_tree(tmp_path))


def test_two_socket_four_numa_smt_shape(two_socket):
    topo = two_socket
    assert len(topo.cpus) == 16
    assert topo.sockets == (0, 1)
    assert topo.num_cores == 8
    assert topo.threads_per_core == 2
    assert [n.node for n in topo.numa_nodes] == [0, 1, 2, 3]
    assert topo.cpus_where(numa_node=0) == frozenset({0, 1, 8, 9})
    assert topo.cpus_where(socket=1) == frozenset({4, 5, 6, 7, 12, 13, 14, 15})
    assert topo.siblings(0) == frozenset({0, 8})
    assert topo.siblings(13) == frozenset({5, 13})
    assert topo.info(13).socket == 1 and topo.info(13).numa_node == 2


def test_l3_is_shared_per_socket_by_default(two_socket):
    assert two_socket.cpus_where(l3_id=0) == two_socket.cpus_where(socket=0)


def test_l3_per_numa_node_and_without_cache_id(tmp_path):
    topo = read_cpu_topology(build_topology_tree(tmp_path, l3_per_node=True, with_cache_id=False))
    # without an id file, the lowest cpu sharing the cache names it
    assert topo.info(2).l3_id == 2
    assert topo.cpus_where(l3_id=2) == topo.cpus_where(numa_node=1)


def test_numa_memory_per_node(two_socket):
    assert two_socket.numa_memory() == {n: 8 * 1024 * 1024 * 1024 for n in range(4)}
    assert two_socket.numa_nodes[0].memory_free_bytes == 4 * 1024 * 1024 * 1024


def test_offline_cpus_are_left_out(tmp_path):
    topo = read_cpu_topology(build_topology_tree(tmp_path, offline=[3, 11]))
    assert topo.online_cpus == frozenset(range(16)) - {3, 11}
    assert 3 not in topo.numa_nodes[1].cpus
    with pytest.raises(InvalidValue):
        topo.info(3)


def test_topology_is_a_frozen_hashable_value(two_socket, tmp_path):
    again = read_cpu_topology(build_topology_tree(tmp_path / "again"))
    assert again == two_socket
    assert hash(again) == hash(two_socket)
    with pytest.raises(AttributeError):
        two_socket.cpus = ()  # type: ignore[misc]


def test_no_numa_dir_means_one_node_with_all_memory(tmp_path):
    host = build_topology_tree(tmp_path, sockets=1, nodes_per_socket=1)
    import shutil

    shutil.rmtree(host.sys("devices", "system", "node"))
    build_proc_tree(tmp_path)
    topo = read_cpu_topology(host)
    assert len(topo.numa_nodes) == 1
    assert topo.numa_nodes[0].cpus == topo.online_cpus
    assert topo.numa_nodes[0].memory_total_bytes == 24683568 * 1024


def test_numa_distances_per_node(two_socket, tmp_path):
    assert two_socket.numa_nodes[0].distances == ((0, 10), (1, 11), (2, 21), (3, 21))
    assert two_socket.numa_nodes[2].distances == ((0, 21), (1, 21), (2, 10), (3, 11))
    host = build_topology_tree(tmp_path / "other", sockets=1)
    host.sys("devices", "system", "node", "node1", "distance").unlink()
    assert [n.distances for n in read_cpu_topology(host).numa_nodes] == [((0, 10), (1, 11)), ()]


@pytest.mark.parametrize("text, nodes, expected", [
    ("10 21\n", [0, 2], ((0, 10), (2, 21))),  # the kernel lists online nodes only, in order
    ("10", [0], ((0, 10),)),
    ("10 21 21", [0, 1], ()),
    ("10 x", [0, 1], ()),
    ("", [0], ()),
])
def test_node_distance_parser(text, nodes, expected):
    assert parse_node_distances(text, nodes) == expected


def test_missing_sysfs_is_not_supported(tmp_path):
    with pytest.raises(NotSupported):
        read_cpu_topology(Host.under(tmp_path))


def test_node_meminfo_parser():
    assert parse_node_meminfo("Node 1 MemTotal: 10 kB\nNode 1 MemFree: 4 kB\n") == (10240, 4096)
    with pytest.raises(InvalidValue):
        parse_node_meminfo("Node 1 MemFree: 4 kB\n")


def test_this_machine_topology():
    topo = read_cpu_topology(Host())
    assert len(topo.cpus) >= 1
    assert topo.online_cpus <= frozenset(range(4096))
    assert sum(topo.numa_memory().values()) > 0


def test_resctrl_detected_on_fake_tree(tmp_path):
    info = detect_resctrl(build_resctrl_tree(tmp_path))
    assert info.kernel_supports and info.mounted and info.usable
    assert info.l3 == L3Cat(0x7FF, 1, 16)
    assert info.l3.ways == 11
    assert info.mba is not None and info.mba.min_bandwidth == 10 and info.mba.delay_linear
    assert {"rdt_a", "cat_l3", "mba"} <= info.cpu_flags


def test_resctrl_absent(tmp_path):
    info = detect_resctrl(Host.under(tmp_path))
    assert not info.mounted and not info.usable and info.l3 is None


def test_resctrl_l3_without_mba(tmp_path):
    info = detect_resctrl(build_resctrl_tree(tmp_path, mba=False))
    assert info.l3 is not None and info.mba is None


def test_bad_resctrl_info_is_invalid(tmp_path):
    host = build_resctrl_tree(tmp_path)
    write_file(host.sys("fs", "resctrl", "info", "L3", "cbm_mask"), "zz\n")
    with pytest.raises(InvalidValue):
        detect_resctrl(host)


def test_this_machine_has_no_resctrl_mounted():
    info = detect_resctrl(Host())
    assert info.mounted == Host().sys("fs", "resctrl", "schemata").is_file()


def test_schemata_parse():
    parsed = parse_schemata("L3:0=7ff;1=0ff\nMB:0=100;1=50\n")
    assert parsed["L3"][1] == "0ff" and parsed["MB"][0] == "100"
    for bad in ("L3", "L3:0", "L3:x=1", ":0=1"):
        with pytest.raises(InvalidValue):
            parse_schemata(bad)


_domains = st.dictionaries(st.integers(0, 63), st.text("0123456789abcdef", min_size=1, max_size=8),
                           min_size=1, max_size=8)


@settings(max_examples=100)
@given(st.dictionaries(st.sampled_from(["L3", "L3CODE", "L3DATA", "MB", "L2"]), _domains,
                       min_size=1, max_size=4))
def test_schemata_round_trip(schemata):
    assert parse_schemata(format_schemata(schemata)) == schemata
