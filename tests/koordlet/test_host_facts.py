"""host_facts: what the daemon reports about its host at start."""

from __future__ import annotations

from system.host import Host
from tests.system.fake_trees import add_cgroup, build_topology_tree, build_v2_tree

from koordlet.util.host_facts import host_facts


def test_v2_host_with_systemd_pods_and_four_numa_nodes(tmp_path):
    host = build_v2_tree(tmp_path)
    build_topology_tree(tmp_path, sockets=2, nodes_per_socket=2, cores_per_node=2, threads_per_core=2)
    add_cgroup(host, "kubepods.slice")
    facts = host_facts(host)
    assert facts["cgroup_mode"] == "v2"
    assert facts["controllers"]["memory"].startswith("v2:")
    assert facts["cgroup_driver"] == "systemd"
    assert (facts["cpus"], facts["sockets"], facts["numa_nodes"], facts["threads_per_core"]) == (16, 2, 4, 2)


def test_host_without_cgroups_or_sysfs_is_reported_not_fatal(tmp_path):
    facts = host_facts(Host.under(tmp_path))
    assert "no cgroup hierarchy" in facts["cgroup_error"]
    assert "topology_error" in facts
