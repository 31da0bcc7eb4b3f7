"""The advisor module on a fake node, and its wiring into the daemon."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from koordlet.agents import AGENTS
from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metricsadvisor.agent import SPEC, collectors_for
from koordlet.metricsadvisor.collectors.pod_resource import PodResourceCollector
from koordlet.metricsadvisor.collectors.psi import PSICollector
from koordlet.metricsadvisor.module import MetricsAdvisorModule
from koordlet.util.host_facts import HostFacts
from tests.koordlet.hubs_helper import built_daemon, config_of
from tests.koordlet.metricsadvisor.fixtures import fake_node, make_pod
from tests.polling import until
from tests.system.fake_trees import set_cgroup_file


async def test_deleted_pods_lose_their_series_at_once(tmp_path: Path):
    keep, gone = make_pod("keep"), make_pod("gone")
    host, states = fake_node(tmp_path, [keep, gone])
    store = MetricStore()
    module = MetricsAdvisorModule(HostFacts(host), store, states, "node-a", [PodResourceCollector(0.02)])
    await module.start()
    try:
        runs = module.scheduler.stats()["podresource"]
        for step in range(1, 4):
            for pod in (keep, gone):
                set_cgroup_file(host, pod.cgroup_parent, "cpuacct.usage", str(step * 10_000_000))
            done = runs.runs
            await until(lambda done=done: runs.runs > done)  # a collection saw this step
        assert module.ready() and module.unsupported == {}
        assert store.latest(SeriesKey.of(Metric.POD_CPU_USAGE_CORES, "gone")) is not None
        states.remove("gone")
        assert store.latest(SeriesKey.of(Metric.POD_MEMORY_USAGE_BYTES, "gone")) is None
        assert {k.pod_uid for k in store.keys(Metric.POD_MEMORY_USAGE_BYTES)} == {"keep"}
    finally:
        await module.stop()
    assert not module.ready()


async def test_a_stopped_container_loses_its_series(tmp_path: Path):
    pod = make_pod("p1", containers=2)
    host, states = fake_node(tmp_path, [pod])
    store = MetricStore()
    module = MetricsAdvisorModule(HostFacts(host), store, states, "node-a", [PodResourceCollector(0.02)])
    await module.start()
    try:
        stopped = pod.containers[1]
        await until(lambda: store.latest(SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, "p1", stopped.id)))
        from koordlet.statesinformer.model import ContainerState
        states.put(replace(pod, containers=(pod.containers[0], replace(stopped, state=ContainerState.EXITED))))
        assert store.latest(SeriesKey.of(Metric.CONTAINER_MEMORY_USAGE_BYTES, "p1", stopped.id)) is None
    finally:
        await module.stop()


async def test_without_a_states_informer_only_node_collectors_run(tmp_path: Path):
    host, _ = fake_node(tmp_path, [])
    config = config_of(state_dir=tmp_path / "state", proc_root_dir=host.proc_root,
                    cgroup_root_dir=host.cgroup_root, sys_root_dir=host.sys_root)
    module = MetricsAdvisorModule(HostFacts(host), MetricStore(), None, "node-a", collectors_for(config))
    await module.start()
    try:
        assert {"podresource", "podthrottled"} <= set(module.unsupported)
        assert "noderesource" in {c.name for c in module.scheduler.collectors}
    finally:
        await module.stop()


def test_gates_choose_the_collectors():
    names = lambda gates: {c.name for c in collectors_for(config_of(feature_gates=gates))}
    assert {"psi", "noderesource", "network"} <= names("") and "cpi" not in names("")
    assert "cpi" in names("CPICollector=true") and "psi" not in names("PSICollector=false")


def test_container_psi_is_read_only_for_the_container_series():
    def psi(**values):
        return next(c for c in collectors_for(config_of(**values)) if isinstance(c, PSICollector))

    assert psi()._containers is False
    assert psi(metrics_container_series="true")._containers is True


def test_the_metric_cache_starts_before_the_advisor(tmp_path: Path):
    assert SPEC in AGENTS
    with built_daemon(config_of(state_dir=tmp_path, addr="127.0.0.1:0")) as daemon:
        names = [m.name for m in daemon._modules]
    assert names.index("metriccache") < names.index("metricsadvisor") < names.index("http")


def test_the_advisor_fills_the_hubs_metric_cache_and_adds_its_metrics_text(tmp_path: Path):
    from tests.koordlet.hubs_helper import hubs_for

    hubs = hubs_for(config_of(state_dir=tmp_path))
    (module,) = SPEC.build(hubs).modules
    assert isinstance(module, MetricsAdvisorModule) and module._store is hubs.metric_cache
    assert len(hubs.http.metrics_parts) == 1  # one renderer: /metrics walks the pods once
