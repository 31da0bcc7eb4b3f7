"""The states informer agent: the bypass pod sources (CRI, kubelet) feeding the daemon's
PodStore hub, which the NRI plugin of the runtime hooks feeds too, and in Kubernetes mode the
node's Node object (its allocatable, labels and annotations)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from koordlet.agent import AgentSpec, Built
from koordlet.statesinformer.module import StatesInformerModule
from koordlet.statesinformer.options import StatesOptions

if TYPE_CHECKING:
    from koordlet.hubs import Hubs


def build(hubs: Hubs) -> Built:
    """The bypass sources; in Kubernetes mode also the watch of the node's Node object."""
    informer = StatesInformerModule(hubs.states, hubs.config, hubs.registry)
    if hubs.config.common.standalone:
        return Built((informer,))
    from koordlet.statesinformer.node_watch import NodeWatch  # Kubernetes mode only

    return Built((informer, NodeWatch(hubs.kube, hubs.states.node(), hubs.states.set_node)))


SPEC = AgentSpec("statesinformer", enabled=lambda config: True, build=build,
                 options=StatesOptions)
