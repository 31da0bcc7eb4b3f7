"""Prometheus series of the QoS manager (koordlet's names where koordlet has them)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from koordlet.metrics.go_counter import GoCounter, render_counters
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
        container_labels = ["node", "pod_namespace", "pod_name", "container_id", "container_name"]
        self.scaled_cfs_burst_us = Gauge("koordlet_container_scaled_cfs_burst_us",
                                         "The maximum accumulated run-time(in microseconds) in container-level set "
                                         "by koordlet", container_labels, registry=registry)
        self.scaled_cfs_quota_us = Gauge("koordlet_container_scaled_cfs_quota_us",
                                         "Run-time replenished within a period (in microseconds) in container-level "
                                         "set by koordlet", container_labels, registry=registry)
        self._scaled_labels: dict[str, tuple[str, ...]] = {}  # container id -> its label values
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
        return render_counters((self.koordlet_pod_eviction, self.koordlet_pod_eviction_detail), openmetrics)

    def container_scaled(self, gauge: Gauge, pod: PodInfo, container: ContainerInfo, value: float) -> None:
        labels = (self.node, pod.namespace, pod.name, container.id, container.name)
        self._scaled_labels[container.id] = labels
        gauge.labels(*labels).set(value)

    def forget_containers(self, live: set[str]) -> None:
        """Drop the series of containers that are gone (no label set outlives its object)."""
        for container_id in [c for c in self._scaled_labels if c not in live]:
            labels = self._scaled_labels.pop(container_id)
            for gauge in (self.scaled_cfs_burst_us, self.scaled_cfs_quota_us):
                try:
                    gauge.remove(*labels)
                except KeyError:
                    pass

    def suppressed(self, policy: str, cores: float) -> None:
        self.be_suppress_cpu_cores.labels(node=self.node, type=policy).set(cores)

    def action(self, strategy: str, action: str, count: int = 1) -> None:
        if count:
            self.actions.labels(strategy=strategy, action=action).inc(count)

    def round(self, strategy: str, result: str) -> None:
        self.rounds.labels(strategy=strategy, result=result).inc()
