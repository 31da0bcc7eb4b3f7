"""HostFacts: what the daemon knows about its host, probed once; the driver re-probed while
kubelet's kubepods is absent."""

from __future__ import annotations

from koordlet.util.host_facts import HostFacts
from system.cgroup_layout import CgroupDriver, QoSTier
from system.host import Host
from tests.system.fake_trees import add_cgroup, build_topology_tree, build_v1_tree, build_v2_tree


def test_v2_host_with_systemd_pods_and_four_numa_nodes(tmp_path):
    host = build_v2_tree(tmp_path)
    build_topology_tree(tmp_path, sockets=2, nodes_per_socket=2, cores_per_node=2, threads_per_core=2)
    add_cgroup(host, "kubepods.slice")
    facts = HostFacts(host).describe()
    assert facts["cgroup_mode"] == "v2"
    assert facts["controllers"]["memory"].startswith("v2:")
    assert facts["cgroup_driver"] == "systemd"
    assert (facts["cpus"], facts["sockets"], facts["numa_nodes"], facts["threads_per_core"]) == (16, 2, 4, 2)


def test_host_without_cgroups_or_sysfs_is_reported_not_fatal(tmp_path):
    facts = HostFacts(Host.under(tmp_path))
    described = facts.describe()
    assert "no cgroup hierarchy" in described["cgroup_error"]
    assert "topology_error" in described and "memory_error" in described
    assert not facts.has_cgroups and facts.online_cpus == frozenset() and facts.topology is None
    assert facts.driver() is None and dict(facts.qos_dirs()) == {}


def test_the_driver_is_looked_for_again_until_kubepods_appears(tmp_path):
    host = build_v1_tree(tmp_path)
    now = [0.0]
    facts = HostFacts(host, clock=lambda: now[0], reprobe_interval=5.0)
    assert facts.driver() is None and dict(facts.qos_dirs()) == {}
    add_cgroup(host, "kubepods.slice")
    now[0] = 4.0
    assert facts.driver() is None  # not yet looked at again
    now[0] = 5.0
    assert facts.driver() is CgroupDriver.SYSTEMD
    assert facts.qos_dirs()[QoSTier.BESTEFFORT] == "kubepods.slice/kubepods-besteffort.slice"
    add_cgroup(host, "kubepods")
    now[0] = 100.0
    assert facts.driver() is CgroupDriver.SYSTEMD  # once known, kept
