"""Prometheus series of the QoS manager (koordlet's names where koordlet has them)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class QoSMetrics:
    def __init__(self, registry: CollectorRegistry | None, node: str) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self.node = node
        # koordlet's koordlet_pod_eviction{node,reason}; prometheus_client exposes it as *_total.
        self.pod_eviction = Counter("koordlet_pod_eviction", "Pods evicted by the QoS manager.",
                                    ["node", "reason"], registry=registry)
        self.be_suppress_cpu_cores = Gauge(
            "koordlet_be_suppress_cpu_cores", "CPU cores best-effort pods are suppressed to.",
            ["node", "type"], registry=registry)
        self.be_suppress_ls_used_cpu_cores = Gauge(
            "koordlet_be_suppress_ls_used_cpu_cores",
            "CPU cores used by non-BE pods in the last suppress round.", ["node"], registry=registry)
        self.actions = Counter("koordlet_qos_actions", "Actions taken by QoS strategies.",
                               ["strategy", "action"], registry=registry)
        self.rounds = Counter("koordlet_qos_strategy_rounds", "QoS strategy rounds by result.",
                              ["strategy", "result"], registry=registry)

    def evicted(self, reason: str) -> None:
        self.pod_eviction.labels(node=self.node, reason=reason).inc()

    def suppressed(self, policy: str, cores: float) -> None:
        self.be_suppress_cpu_cores.labels(node=self.node, type=policy).set(cores)

    def action(self, strategy: str, action: str, count: int = 1) -> None:
        if count:
            self.actions.labels(strategy=strategy, action=action).inc(count)

    def round(self, strategy: str, result: str) -> None:
        self.rounds.labels(strategy=strategy, result=result).inc()
