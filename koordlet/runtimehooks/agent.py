"""The runtime hooks agent: one QoS policy per container, applied as containerd's NRI
plugin and by the bypass reconcile loop (`--runtime-hooks-mode`), following the NodeSLO in
force and the QoS manager's BE suppress decision, with the ORM's ports when it runs.
`GET /api/v1/pods` shows every pod's plan."""

from __future__ import annotations

from typing import TYPE_CHECKING

from koordlet.agent import AgentSpec, Built
from koordlet.config import Config
from koordlet.runtimehooks.module import RuntimeHooksModule
from koordlet.runtimehooks.options import HooksOptions
from koordlet.statesinformer.nri_feed import NriFeed

if TYPE_CHECKING:
    from koordlet.hubs import Hubs


def enabled(config: Config) -> bool:
    gates = config.common.feature_gates
    return gates.enabled("NRIRuntimeHooks") or gates.enabled("CgroupReconcile")


def build(hubs: Hubs) -> Built:
    module = RuntimeHooksModule(hubs.config, hubs.facts, hubs.states, NriFeed(hubs.states), hubs.executor, hubs.registry,
                                hubs.ports, node_slo=hubs.node_slo, be_suppress=hubs.be_suppress)
    hubs.http.add_route("/api/v1/pods", module.pods_route)
    hubs.http.add_metrics_text(module.render_pools)
    return Built((module,))


SPEC = AgentSpec("runtimehooks", enabled=enabled, build=build,
                 options=HooksOptions)
