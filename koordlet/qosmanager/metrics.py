"""Prometheus series of the QoS manager (koordlet's names where koordlet has them)."""

from __future__ import annotations

from koordlet.metrics.client import CollectorRegistry, Counter, Gauge
from koordlet.metrics.container_gauge import ContainerGauge
from koordlet.metrics.go_counter import GoCounter
from koordlet.metrics.text import render_families
from koordlet.statesinformer.model import ContainerInfo, PodInfo


class QoSMetrics:
    def __init__(self, registry: CollectorRegistry | None, node: str) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self.node = node
        # ours, as prometheus_client names it (koordlet_pod_eviction_total) ...
        self.pod_eviction = Counter("koordlet_pod_eviction", "Eviction attempts of the QoS manager by result "
                                    "(evicted; refused: a PodDisruptionBudget said 429; failed).",
                                    ["node", "reason", "result"], registry=registry)
        # ... and koordlet's, under their Go names (rendered by render_koordlet_counters)
        self.koordlet_pod_eviction = GoCounter("koordlet_pod_eviction", "Number of eviction launched by koordlet",
                                               ("node", "reason"))
        self.koordlet_pod_eviction_detail = GoCounter(
            "koordlet_pod_eviction_detail", "evict detail launched by koordlet",
            ("node", "pod_namespace", "pod_name", "reason"))
        self.be_suppress_be_used_cpu_cores = Gauge(
            "koordlet_be_suppress_be_used_cpu_cores", "Number of cpu cores used by BE pods in the last suppress round",
            ["node"], registry=registry)
        self.be_suppress_cpu_cores = Gauge(
            "koordlet_be_suppress_cpu_cores", "CPU cores best-effort pods are suppressed to.",
            ["node", "type"], registry=registry)
        self.be_suppress_ls_used_cpu_cores = Gauge(
            "koordlet_be_suppress_ls_used_cpu_cores",
            "CPU cores used by non-BE pods in the last suppress round.", ["node"], registry=registry)
        # koordlet's container gauges, hand-rendered (render_koordlet_counters): CPU burst sets
        # one per limited container every second
        self.scaled_cfs_burst_us = ContainerGauge(
            "koordlet_container_scaled_cfs_burst_us",
            "The maximum accumulated run-time(in microseconds) in container-level set by koordlet")
        self.scaled_cfs_quota_us = ContainerGauge(
            "koordlet_container_scaled_cfs_quota_us",
            "Run-time replenished within a period (in microseconds) in container-level set by koordlet")
        self.actions = Counter("koordlet_qos_actions", "Actions taken by QoS strategies.",
                               ["strategy", "action"], registry=registry)
        self.rounds = Counter("koordlet_qos_strategy_rounds", "QoS strategy rounds by result.",
                              ["strategy", "result"], registry=registry)

    def evicted(self, reason: str, namespace: str = "", name: str = "") -> None:
        self.pod_eviction.labels(node=self.node, reason=reason, result="evicted").inc()
        self.koordlet_pod_eviction.inc(self.node, reason)
        self.koordlet_pod_eviction_detail.inc(self.node, namespace, name, reason)

    def eviction_not_done(self, reason: str, result: str) -> None:
        """An eviction the API server refused (429) or that failed: counted, retried next round."""
        self.pod_eviction.labels(node=self.node, reason=reason, result=result).inc()

    def render_koordlet_counters(self, openmetrics: bool = False) -> bytes:
        """koordlet's counters under their Go names and the container gauges."""
        families = [self.koordlet_pod_eviction.family(), self.koordlet_pod_eviction_detail.family(),
                    self.scaled_cfs_burst_us.family(), self.scaled_cfs_quota_us.family()]
        return render_families(families, openmetrics)

    def container_scaled(self, gauge: ContainerGauge, pod: PodInfo, container: ContainerInfo, value: float) -> None:
        gauge.set((self.node, pod.namespace, pod.name, container.id, container.name), value)

    def forget_containers(self, live: set[str]) -> None:
        """Drop the series of containers that are gone (no label set outlives its object)."""
        for gauge in (self.scaled_cfs_burst_us, self.scaled_cfs_quota_us):
            for container_id in gauge.container_ids():
                if container_id not in live:
                    gauge.remove(container_id)

    def suppressed(self, policy: str, cores: float) -> None:
        self.be_suppress_cpu_cores.labels(node=self.node, type=policy).set(cores)

    def action(self, strategy: str, action: str, count: int = 1) -> None:
        if count:
            self.actions.labels(strategy=strategy, action=action).inc(count)

    def round(self, strategy: str, result: str) -> None:
        self.rounds.labels(strategy=strategy, result=result).inc()
