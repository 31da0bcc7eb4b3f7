"""The states informer agent: the bypass pod sources (CRI, kubelet) feeding the daemon's
PodStore hub, which the NRI plugin of the runtime hooks feeds too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from koordlet.agent import AgentSpec, Built
from koordlet.statesinformer.module import StatesInformerModule
from koordlet.statesinformer.options import StatesOptions

if TYPE_CHECKING:
    from koordlet.hubs import Hubs


def build(hubs: Hubs) -> Built:
    return Built((StatesInformerModule(hubs.states, hubs.config, hubs.registry),))


SPEC = AgentSpec("statesinformer", enabled=lambda config: True, build=build,
                 options=StatesOptions)
