"""The states informer: the node's pods and containers, one hub every agent reads.

`model` holds the values, `api` the protocol readers depend on.
"""

from koordlet.statesinformer.api import PodListener, StatesInformer, StaticStates, Unsubscribe
from koordlet.statesinformer.model import (
    ContainerInfo, ContainerState, K8sQoS, KatalystQoSLevel, KoordQoSClass, LinuxResources, NodeInfo,
    PodEvent, PodEventKind, PodInfo, PodQoS, PriorityBand, Resources, SandboxState, Source,
)

__all__ = [
    "ContainerInfo", "ContainerState", "K8sQoS", "KatalystQoSLevel", "KoordQoSClass", "LinuxResources",
    "NodeInfo", "PodEvent", "PodEventKind", "PodInfo", "PodListener", "PodQoS", "PriorityBand", "Resources",
    "SandboxState", "Source", "StatesInformer", "StaticStates", "Unsubscribe",
]
