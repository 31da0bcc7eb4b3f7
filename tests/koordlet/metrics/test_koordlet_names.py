"""Every koordlet metric that applies to what koordlet-py does is exported under koordlet's
name, type and labels (facts: koordlet's pkg/koordlet/metrics/*.go at HEAD, 41 names)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from koordlet.apis.qos import KoordQoSClass
from koordlet.daemon.cli import parse_args
from koordlet.metriccache.api import Metric, Sample, SeriesKey
from koordlet.metriccache.store import MetricStore
from koordlet.metrics.registry import new_registry, record_host_probe
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.qosmanager.metrics import QoSMetrics
from koordlet.reporter.batch import BatchResources
from koordlet.reporter.nodemetric import Usage
from koordlet.reporter.report_metrics import ReportMetrics
from koordlet.runtimehooks.allocations import NO_ALLOCATIONS, AllocationIndex
from koordlet.runtimehooks.engine import HookMetrics
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.runtimehooks.hooks import HOOKS
from koordlet.runtimehooks.module import RuntimeHooksModule
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo, Resources
from koordlet.statesinformer.module import _kubelet_client
from koordlet.statesinformer.options import StatesOptions
from resourceexecutor.metrics import ExecutorMetrics
from tests.koordlet.metricsadvisor.test_exporter import NOW, scrape, setup_node
from tests.koordlet.runtimehooks.fixtures import make_pod

N, PU, PN, PNS, CI, CN = "node", "pod_uid", "pod_name", "pod_namespace", "container_id", "container_name"
PSI = ("psi_resource_type", "psi_precision", "psi_degree", "cpu_full_supported")

# name -> (type, labels) for the ones we export; name -> why not, for the others
KOORDLET = {
    "koordlet_start_time": ("gauge", {N}),
    "koordlet_collect_node_cpu_info_status": ("gauge", {N, "status"}),
    "koordlet_collect_node_numa_info_status": ("gauge", {N, "status"}),
    "koordlet_pod_eviction": ("counter", {N, "reason"}),
    "koordlet_pod_eviction_detail": ("counter", {N, PNS, PN, "reason"}),
    "koordlet_node_used_cpu_cores": ("gauge", {N}),
    "koordlet_node_used_memory_bytes": ("gauge", {N}),
    "koordlet_container_cpi": ("gauge", {N, CI, CN, PU, PN, PNS, "cpi_field"}),
    "koordlet_container_scaled_cfs_burst_us": ("gauge", {N, PNS, PN, CI, CN}),
    "koordlet_container_scaled_cfs_quota_us": ("gauge", {N, PNS, PN, CI, CN}),
    "koordlet_cpuset_share_pool_cpu_cores": ("gauge", {N}),
    "koordlet_cpuset_be_share_pool_cpu_cores": ("gauge", {N}),
    "koordlet_cpuset_share_pool_info": ("gauge", {N, "cpu"}),
    "koordlet_cpuset_be_share_pool_info": ("gauge", {N, "cpu"}),
    "koordlet_be_suppress_cpu_cores": ("gauge", {N, "type"}),
    "koordlet_be_suppress_ls_used_cpu_cores": ("gauge", {N}),
    "koordlet_be_suppress_be_used_cpu_cores": ("gauge", {N}),
    "koordlet_node_metric_node_usage": ("gauge", {N, "resource", "unit"}),
    "koordlet_node_metric_system_usage": ("gauge", {N, "resource", "unit"}),
    "koordlet_container_psi": ("gauge", {N, CI, CN, PU, PN, PNS, *PSI}),
    "koordlet_pod_psi": ("gauge", {N, PU, PN, PNS, *PSI}),
    "koordlet_resource_update_duration_milliseconds": ("histogram", {"type", "status"}),
    "koordlet_kubelet_request_duration_seconds": ("histogram", {"verb", "path", "code"}),
    "koordlet_node_resource_allocatable": ("gauge", {N, "resource", "unit"}),
    "koordlet_container_resource_requests": ("gauge", {N, "resource", "unit", PU, PN, PNS, CI, CN}),
    "koordlet_container_resource_limits": ("gauge", {N, "resource", "unit", PU, PN, PNS, CI, CN}),
    "koordlet_runtime_hook_invoked_duration_milliseconds": ("histogram", {N, "hook", "stage", "status"}),
}
NOT_APPLICABLE = {
    "koordlet_collect_node_local_storage_info_status": "no local storage collector",
    "koordlet_container_core_sched_cookie": "no core scheduling (gate CoreSched)",
    "koordlet_core_sched_cookie_manage_status": "no core scheduling (gate CoreSched)",
    "koordlet_host_application_resource_usage": "NodeSLO hostApplications are not read",
    "koordlet_node_metric_numa_node_usage": "the NodeMetric carries no NUMA-level usage",
    "koordlet_node_metric_numa_system_usage": "the NodeMetric carries no NUMA-level usage",
    "koordlet_container_oom_score_adj": "no oom_score_adj hook (gate OOMScoreAdj)",
    "koordlet_node_predicted_resource_reclaimable": "no peak prediction",
    "koordlet_node_predicted_resource_peak": "no peak prediction",
    "koordlet_resctrl_llc_occupancy": "no resctrl collector (gate ResctrlCollector)",
    "koordlet_resctrl_memory_bandwidth": "no resctrl collector (gate ResctrlCollector)",
    "koordlet_node_priority_resource_reclaimable": "no priority (mid/batch) resources",
    "koordlet_node_resource_priority_reclaimable_status": "no priority (mid/batch) resources",
    "koordlet_runtime_hook_reconciler_invoked_duration_milliseconds":
        "the reconciler runs one levelled batch per pass, not one call per level and resource "
        "(koordlet_runtime_hooks_reconcile_duration_seconds{mode})",
}


def test_the_table_covers_koordlets_41_names():
    assert len(KOORDLET) + len(NOT_APPLICABLE) == 41
    assert not KOORDLET.keys() & NOT_APPLICABLE.keys()


Families = dict[str, tuple[str, set[str]]]


def families_of(text: bytes) -> Families:
    """name -> (type, label names over every sample; a histogram's `le` left out)."""
    return {f.name: (f.type, {k for s in f.samples for k in s.labels} - {"le"})
            for f in text_string_to_metric_families(text.decode())}


def registry_families() -> Families:
    """Our prometheus_client metric definitions, each given one sample."""
    registry = new_registry("n1")
    record_host_probe(registry, "n1", True, True)
    pod = make_pod("u1", KoordQoSClass.LS)
    qos = QoSMetrics(registry, "n1")
    qos.evicted("BEMemoryEvict", "default", "be1")
    qos.suppressed("cpuset", 2)
    qos.be_suppress_ls_used_cpu_cores.labels(node="n1").set(1)
    qos.be_suppress_be_used_cpu_cores.labels(node="n1").set(1)
    for gauge in (qos.scaled_cfs_burst_us, qos.scaled_cfs_quota_us):
        qos.container_scaled(gauge, pod, pod.containers[0], 1000)
    report = ReportMetrics(registry, "n1")
    report.show_batch(BatchResources(1000, 1 << 30))
    report.show_usage(Usage(1.0, 1 << 30), Usage(0.1, 1 << 20))
    HookMetrics(registry, "n1").timed(HOOKS[0], "RunPodSandbox").decide(pod, None, HookConfig(), NO_ALLOCATIONS)
    ExecutorMetrics(registry).record_writes([("cpu.shares", 0.0001, True)])
    kubelet = _kubelet_client(parse_args(["--kubelet-pods-url", "http://127.0.0.1:10255/pods"])[StatesOptions],
                              registry)
    assert kubelet is not None
    kubelet._observe("/pods", "200", 0.004)
    return families_of(generate_latest(registry) + qos.render_koordlet_counters())


def text_families() -> Families:
    """What the hand-written renderers export: the advisor's (koordlet_container_psi only
    with --metrics-container-series), the pools, requests/limits."""
    store, states, _, pod = setup_node()
    store.append([Sample(SeriesKey.of(Metric.NODE_MEMORY_USAGE_BYTES), NOW, 1.0)])
    cid = pod.containers[0].id
    psi = {(uid, c): {"cpu": ((1.0, 0.5, 0.25), None)} for uid, c in (("u1", ""), ("u1", cid))}
    exporter = AdvisorExporter(store, states, "node-a", clock=lambda: NOW + 1, psi=lambda: psi, container_series=True)
    out = {name: ("gauge", {k for s in samples for k in s.labels}) for name, samples in scrape(exporter).items()}
    fake_module = SimpleNamespace(engine=SimpleNamespace(config=HookConfig(node_cpus=frozenset({0, 1})),
                                                         index=AllocationIndex()),
                                  _config=parse_args(["--node-name", "n1"]))
    out.update(families_of(RuntimeHooksModule.render_pools(fake_module)))  # type: ignore[arg-type]
    pod = make_pod("u2", KoordQoSClass.LS)
    container = dataclasses.replace(pod.containers[0], spec=Resources({"cpu": 500}, {"cpu": 1000}))
    states = StaticStates(NodeInfo("n1"), [dataclasses.replace(pod, containers=(container,))])
    out.update(families_of(AdvisorExporter(MetricStore(), states, "n1").render_external()))
    return out


def test_every_koordlet_metric_that_applies_is_exported_with_its_type_and_labels():
    ours = {**registry_families(), **text_families()}
    wrong = {name: ours.get(name) for name, want in KOORDLET.items() if ours.get(name) != want}
    assert wrong == {}
