"""The NodeResourceTopology: the pure builder (host zones, ORM zones, policies), the CRD's
schema, the writer against a local API server, and the standalone route."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from koordlet.orm.module import OrmModule
from koordlet.ports.zones import NO_ZONES
from koordlet.reporter.nrt import canonical, nrt_object, topology_policy, updated, zone_costs
from koordlet.reporter.nrt_source import NrtSource
from koordlet.reporter.resource_managers import KubeletStateFiles
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from koordlet.topology.zones import host_zones, numa_zones
from koordlet.util.host_facts import HostFacts
from system.topology import CpuInfo, CpuTopology, NumaNode
from tests.koordlet.orm.test_module import config_for, dedicated_pod, settle
from tests.koordlet.reporter.fixtures import GI, shared_file
from tests.polling import until
from tests.system.fake_trees import build_topology_tree

NODE = "node-1"


def two_nodes() -> CpuTopology:
    """CPUs 0-3 on NUMA node 0, 4-7 on node 1; 16 GiB and 8 GiB; distances 10 and 21."""
    cpus = tuple(CpuInfo(cpu, cpu // 2, 0, cpu // 4, 0) for cpu in range(8))
    return CpuTopology(cpus, (NumaNode(0, frozenset(range(4)), 16 * GI, 0, ((0, 10), (1, 21))),
                              NumaNode(1, frozenset(range(4, 8)), 8 * GI, 0, ((0, 21), (1, 10)))))


def resources(obj: dict[str, Any]) -> dict[str, dict[str, tuple[str, str, str]]]:
    """zone name -> resource name -> (capacity, allocatable, available)."""
    return {zone["name"]: {r["name"]: (r["capacity"], r["allocatable"], r["available"]) for r in zone["resources"]}
            for zone in obj["zones"]}


def zones_of(topology: CpuTopology, reserved: frozenset[int], exclusive: frozenset[int]) -> list[dict[str, Any]]:
    node_cpus = {n.node: n.cpus for n in topology.numa_nodes}
    return numa_zones(node_cpus, {n.node: n.memory_total_bytes for n in topology.numa_nodes}, reserved, exclusive, {})


# ------------------------------------------------------------------ builder

def test_host_zones_are_the_numa_nodes_with_nothing_reserved():
    assert host_zones(two_nodes(), frozenset({1})) == zones_of(two_nodes(), frozenset(), frozenset({1}))


@pytest.mark.parametrize("reserved, exclusive, expected", [
    (frozenset(), frozenset(), {"node-0": ("4", "4", "4"), "node-1": ("4", "4", "4")}),
    (frozenset({0}), frozenset(), {"node-0": ("4", "3", "3"), "node-1": ("4", "4", "4")}),
    (frozenset({0}), frozenset({1, 2, 5}), {"node-0": ("4", "3", "1"), "node-1": ("4", "4", "3")}),
    (frozenset({0, 4}), frozenset({5, 6, 7}), {"node-0": ("4", "3", "3"), "node-1": ("4", "3", "0")}),
])
def test_zones_take_reserved_from_allocatable_and_exclusive_from_available(reserved, exclusive, expected):
    obj = nrt_object(NODE, zones_of(two_nodes(), reserved, exclusive), "", "container")
    found = resources(obj)
    assert {zone: cpu["cpu"] for zone, cpu in found.items()} == expected
    assert found["node-0"]["memory"] == (str(16 * GI),) * 3
    assert found["node-1"]["memory"] == (str(8 * GI),) * 3
    assert [(z["name"], z["type"]) for z in obj["zones"]] == [("node-0", "Node"), ("node-1", "Node")]


def test_the_object_names_the_node_and_keeps_only_crd_zone_fields():
    obj = nrt_object(NODE, host_zones(two_nodes(), frozenset()), "", "container")
    assert obj["apiVersion"] == "topology.node.k8s.io/v1alpha2" and obj["kind"] == "NodeResourceTopology"
    assert obj["metadata"] == {"name": NODE}
    assert all(set(zone) == {"name", "type", "resources"} for zone in obj["zones"])  # no cpus lists


@pytest.mark.parametrize("policy, scope, policies", [
    ("", "container", ["None"]),
    ("none", "pod", ["None"]),
    ("single-numa-node", "container", ["SingleNUMANodeContainerLevel"]),
    ("single-numa-node", "pod", ["SingleNUMANodePodLevel"]),
    ("restricted", "container", ["Restricted"]),
    ("best-effort", "pod", ["BestEffort"]),
    ("numeric", "container", ["None"]),
])
def test_policies_and_attributes_follow_the_topology_manager(policy, scope, policies):
    obj = nrt_object(NODE, [], policy, scope)
    assert obj["topologyPolicies"] == policies
    assert obj["attributes"] == [{"name": "topologyManagerPolicy", "value": policy or "none"},
                                 {"name": "topologyManagerScope", "value": scope}]
    assert topology_policy(policy, scope) == policies[0]


def test_costs_are_the_numa_distances_of_the_zones_that_have_them():
    costs = zone_costs(two_nodes().numa_nodes)
    obj = nrt_object(NODE, host_zones(two_nodes(), frozenset()), "", "container", costs)
    assert [zone["costs"] for zone in obj["zones"]] == [
        [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 21}],
        [{"name": "node-0", "value": 21}, {"name": "node-1", "value": 10}]]
    without = NumaNode(1, frozenset(range(4, 8)), 8 * GI)
    obj = nrt_object(NODE, host_zones(two_nodes(), frozenset()), "", "container",
                     zone_costs((two_nodes().numa_nodes[0], without)))
    assert "costs" in obj["zones"][0] and "costs" not in obj["zones"][1]


def test_canonical_form_ignores_metadata_and_sees_any_zone_change():
    obj = nrt_object(NODE, host_zones(two_nodes(), frozenset()), "restricted", "container")
    stored = copy.deepcopy(obj)
    stored["metadata"].update(resourceVersion="7", uid="u", labels={"other": "x"})
    assert canonical(stored) == canonical(obj)
    changed = nrt_object(NODE, host_zones(two_nodes(), frozenset({3})), "restricted", "container")
    assert canonical(changed) != canonical(obj)
    merged = updated(stored, changed)
    assert merged["metadata"] == stored["metadata"] and canonical(merged) == canonical(changed)


# ------------------------------------------------------------------ the CRD

@functools.lru_cache(maxsize=None)
def nrt_schemas() -> dict[str, dict[str, Any]]:
    path = shared_file("crds", "topology.node.k8s.io_noderesourcetopologies.yaml")
    if not path.is_file():
        pytest.skip("published CRDs not found (%s): ../shared/crds is absent" % path)
    document = yaml.safe_load(path.read_text())
    return {v["name"]: v["schema"]["openAPIV3Schema"] for v in document["spec"]["versions"]}


@pytest.mark.parametrize("version", ["v1alpha1", "v1alpha2"])
def test_the_object_validates_against_both_served_versions(version):
    schema = nrt_schemas()[version]
    obj = nrt_object(NODE, zones_of(two_nodes(), frozenset({0}), frozenset({1})), "single-numa-node", "pod",
                     zone_costs(two_nodes().numa_nodes))
    jsonschema.validate(obj, schema)
    assert set(obj) - {"apiVersion", "kind", "metadata"} <= set(schema["properties"]) | {"attributes"}
    if version == "v1alpha2":  # the one that keeps our attributes
        assert "attributes" in schema["properties"]


def test_the_schema_check_can_fail():
    obj = nrt_object(NODE, host_zones(two_nodes(), frozenset()), "", "container")
    obj["zones"][0]["resources"][0]["available"] = "four"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, nrt_schemas()["v1alpha2"])


# ------------------------------------------------------------------ sources

async def test_without_the_orm_zones_come_from_the_host_and_kubelet_checkpoint(tmp_path):
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    source = NrtSource(NODE, two_nodes(), NO_ZONES, KubeletStateFiles(kubelet))
    first = await source.build()
    assert first is not None and resources(first)["node-0"]["cpu"] == ("4", "4", "4")
    assert first["topologyPolicies"] == ["None"] and first["attributes"][0]["value"] == "none"
    (kubelet / "cpu_manager_state").write_text(json.dumps(
        {"policyName": "static", "defaultCpuSet": "0,3-4,7", "entries": {"uid-a": {"main": "1-2,5-6"}}}))
    found = resources(await source.build())
    assert found["node-0"]["cpu"] == ("4", "4", "2") and found["node-1"]["cpu"] == ("4", "4", "2")
    (kubelet / "cpu_manager_state").write_text(json.dumps({"policyName": "none", "entries": {"uid-a": {"main": "5"}}}))  # like facts(): none pins nothing
    assert resources(await source.build())["node-1"]["cpu"] == ("4", "4", "4")


async def test_without_a_readable_topology_there_is_no_object(tmp_path):
    source = NrtSource(NODE, None, NO_ZONES, KubeletStateFiles(tmp_path))
    assert await source.build() is None


async def test_with_the_orm_zones_are_its_zones_and_follow_its_allocations(tmp_path):
    host = build_topology_tree(tmp_path / "root", sockets=1, nodes_per_socket=2, cores_per_node=2,
                               threads_per_core=1)
    orm = OrmModule(config_for(tmp_path), HostFacts(host), StaticStates(NodeInfo(NODE)))
    # the ORM's policy and --reserved-cpus 0 (config_for): the host source would say neither
    source = NrtSource(NODE, HostFacts(host).topology, orm, KubeletStateFiles(tmp_path))
    not_started = await source.build()  # the host's zones stand in until the ORM runs
    assert not_started is not None and not_started["topologyPolicies"] == ["None"]
    await orm.start()
    try:
        before = resources(await source.build())
        assert before["node-0"]["cpu"] == ("2", "1", "1") and before["node-1"]["cpu"] == ("2", "2", "2")
        await orm.admit_pod(dedicated_pod("a"))
        await settle(orm)
        after = resources(await source.build())
        taken = [zone for zone in after if after[zone]["cpu"][2] != before[zone]["cpu"][2]]
        assert len(taken) == 1 and int(after[taken[0]]["cpu"][2]) == int(before[taken[0]]["cpu"][2]) - 1
        obj = await source.build()
        assert obj is not None and obj["topologyPolicies"] == ["SingleNUMANodeContainerLevel"]
        assert obj["zones"][1]["costs"] == [{"name": "node-0", "value": 11}, {"name": "node-1", "value": 10}]
        jsonschema.validate(obj, nrt_schemas()["v1alpha2"])
    finally:
        await orm.stop()


# ------------------------------------------------------------------ the writer

pytest.importorskip("lightkube")

from koordlet.reporter.kube_sink import CONFLICT_RETRIES, SinkError  # noqa: E402
from koordlet.reporter.nrt_sink import NrtOutcome, NrtWriter  # noqa: E402
from koordlet.util.kube_client import open_kube_client  # noqa: E402
from tests.koordlet.hubs_helper import config_of  # noqa: E402
from tests.koordlet.reporter.fake_apiserver import (
    FakeApiServer,  # noqa: E402
    kubeconfig,  # noqa: E402
)

PATH = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"
KEY = ("noderesourcetopologies", NODE)


def built(exclusive: frozenset[int] = frozenset()) -> dict[str, Any]:
    return nrt_object(NODE, zones_of(two_nodes(), frozenset({0}), exclusive), "single-numa-node", "container")


@pytest.fixture
async def api(tmp_path):
    server = FakeApiServer()
    url = await server.start()
    client = open_kube_client(config_of(kubeconfig=kubeconfig(tmp_path, url)))
    yield server, client
    await client.close()
    await server.stop()


def writes(server: FakeApiServer) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in server.requests if r.method != "GET"]


async def test_a_missing_object_is_created_and_an_unchanged_one_never_rewritten(api):
    server, client = api
    writer = NrtWriter(client, NODE)
    assert await writer.write(built()) is NrtOutcome.CREATED
    assert server.calls("GET")[0].status == 404
    assert writes(server) == [("POST", PATH)]
    assert canonical(server.objects[KEY]) == canonical(built())
    requests = len(server.requests)
    assert await writer.write(built()) is NrtOutcome.UNCHANGED
    assert len(server.requests) == requests  # not even a GET


async def test_a_change_is_written_over_the_clusters_copy_keeping_its_metadata(api):
    server, client = api
    stored = built()
    stored["metadata"]["labels"] = {"someone": "else"}
    server.put_object(KEY[0], stored)
    writer = NrtWriter(client, NODE)
    assert await writer.write(built(frozenset({5}))) is NrtOutcome.UPDATED
    assert writes(server) == [("PUT", PATH + "/" + NODE)]
    assert server.calls("PUT")[0].body["metadata"]["resourceVersion"] == "101"
    now = server.objects[KEY]
    assert now["metadata"]["labels"] == {"someone": "else"}
    assert resources(now)["node-1"]["cpu"] == ("4", "4", "3")


async def test_after_a_restart_an_identical_cluster_copy_is_not_rewritten(api):
    server, client = api
    server.put_object(KEY[0], built())
    assert await NrtWriter(client, NODE).write(built()) is NrtOutcome.UNCHANGED
    assert writes(server) == []


async def test_a_conflict_rereads_and_retries(api):
    server, client = api
    server.put_object(KEY[0], built())
    server.concurrent_writes = 2
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    assert await NrtWriter(client, NODE, sleep=sleep).write(built(frozenset({1}))) is NrtOutcome.UPDATED
    assert [r.status for r in server.calls("PUT")] == [409, 409, 200]
    assert len(server.calls("GET")) == 3
    # the NodeMetric sink's waits: 10 ms, then x5, each with at most 10 % jitter
    assert len(waits) == 2 and 0.010 <= waits[0] <= 0.011 and 0.050 <= waits[1] <= 0.055
    assert resources(server.objects[KEY])["node-0"]["cpu"] == ("4", "3", "2")


async def test_endless_conflicts_give_up_after_a_bounded_number_of_attempts(api):
    server, client = api
    server.put_object(KEY[0], built())
    server.concurrent_writes = CONFLICT_RETRIES + 10

    async def no_wait(seconds: float) -> None:
        pass

    writer = NrtWriter(client, NODE, sleep=no_wait)
    with pytest.raises(SinkError, match="still conflicting"):
        await writer.write(built(frozenset({1})))
    assert len(server.calls("PUT")) == CONFLICT_RETRIES
    server.concurrent_writes = 0
    assert await writer.write(built(frozenset({1}))) is NrtOutcome.UPDATED  # a failed write is not remembered


async def test_a_create_race_is_retried_as_an_update(api):
    server, client = api
    writer = NrtWriter(client, NODE)
    first = True

    original = server._route

    def route(method, target, body):
        nonlocal first
        if method == "POST" and first:  # someone creates it between our GET and our POST
            first = False
            server.put_object(KEY[0], built(frozenset({7})))
        return original(method, target, body)

    server._route = route  # type: ignore[method-assign]
    assert await writer.write(built()) is NrtOutcome.UPDATED
    assert [(r.method, r.status) for r in server.requests if r.method != "GET"] == [("POST", 409), ("PUT", 200)]
    assert canonical(server.objects[KEY]) == canonical(built())


async def test_a_missing_crd_fails_at_once(api):
    server, client = api
    original = server._route

    def route(method, target, body):  # what an API server without the CRD answers
        return (404, {"kind": "Status", "code": 404, "reason": "NotFound"}) if "topology" in target \
            else original(method, target, body)

    server._route = route  # type: ignore[method-assign]
    with pytest.raises(SinkError, match="noderesourcetopology"):
        await NrtWriter(client, NODE).write(built())
    assert [r.method for r in server.requests] == ["GET", "POST"]


async def test_a_deletion_between_get_and_put_is_retried_as_a_create(api):
    server, client = api
    server.put_object(KEY[0], built())
    original = server._route

    def route(method, target, body):
        if method == "PUT":
            server.objects.pop(KEY, None)
        return original(method, target, body)

    server._route = route  # type: ignore[method-assign]
    assert await NrtWriter(client, NODE).write(built(frozenset({1}))) is NrtOutcome.CREATED
    assert [(r.method, r.status) for r in server.requests] == [("GET", 200), ("PUT", 404), ("GET", 404), ("POST", 201)]


async def test_other_errors_fail_the_write(api):
    server, client = api
    server.fail_with = 500
    with pytest.raises(SinkError, match="noderesourcetopology"):
        await NrtWriter(client, NODE).write(built())


# ------------------------------------------------------------------ the module and route

async def test_the_reporter_serves_the_object_and_writes_it_only_on_change(tmp_path, api):
    from koordlet.reporter.kube_sink import KubeSink
    from tests.koordlet.reporter.test_module import get, hubs

    server, client = api
    host = build_topology_tree(tmp_path / "root", sockets=1, nodes_per_socket=2, cores_per_node=2,
                               threads_per_core=1)
    h = hubs(tmp_path, host=host)
    from koordlet.reporter.agent import SPEC as REPORTER

    [module] = REPORTER.build(h).modules
    assert get(h.http, "/apis/v1/noderesourcetopology")[0] == 503
    module._kube_sink_factory = lambda: (KubeSink(client, NODE), lambda: None)
    await module.prepare()
    assert await module.topology_once() is NrtOutcome.CREATED
    assert await module.topology_once() is NrtOutcome.UNCHANGED
    assert writes(server) == [("POST", PATH)]
    status, body = get(h.http, "/apis/v1/noderesourcetopology")
    assert status == 200 and canonical(body) == canonical(server.objects[KEY])
    assert resources(body)["node-0"]["cpu"] == ("2", "2", "2")
    jsonschema.validate(body, nrt_schemas()["v1alpha2"])


async def test_the_topology_loop_runs_when_the_gate_is_on_and_not_when_off(tmp_path):
    from tests.koordlet.reporter.test_module import get, hubs

    host = build_topology_tree(tmp_path / "root", sockets=1, nodes_per_socket=2, cores_per_node=2,
                               threads_per_core=1)
    from koordlet.reporter.agent import SPEC as REPORTER

    h = hubs(tmp_path, host=host)
    [module] = REPORTER.build(h).modules
    await module.start()
    try:
        assert "reports-topology" in [loop.name for loop in module._loops]
        await until(lambda: get(h.http, "/apis/v1/noderesourcetopology")[0] == 200)
    finally:
        await module.stop()

    off = hubs(Path(tmp_path / "off"), "--feature-gates", "NodeTopologyReport=false", host=host)
    [module] = REPORTER.build(off).modules
    await module.start()
    try:
        assert "reports-topology" not in [loop.name for loop in module._loops]
    finally:
        await module.stop()


def test_the_writer_addresses_the_resource_the_builder_names():
    from koordlet.reporter.nrt import GROUP, KIND, PLURAL, VERSION
    from koordlet.reporter.nrt_sink import _resource

    api = _resource()._api_info
    assert (api.resource.group, api.resource.version, api.resource.kind, api.plural) == (GROUP, VERSION, KIND, PLURAL)
