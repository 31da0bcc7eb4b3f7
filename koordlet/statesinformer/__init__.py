"""The states informer: the node's pods and containers, one hub every agent reads.

`model` holds the values, `api` the protocol readers depend on; the QoS vocabulary the
pods carry is koordlet.apis.qos.
"""

from koordlet.statesinformer.api import PodListener, StatesInformer, StaticStates, Unsubscribe
from koordlet.statesinformer.model import (
    ContainerInfo,
    ContainerState,
    LinuxResources,
    NodeInfo,
    PodEvent,
    PodEventKind,
    PodInfo,
    Resources,
    SandboxState,
    Source,
)

__all__ = [
    "ContainerInfo", "ContainerState", "LinuxResources", "NodeInfo", "PodEvent", "PodEventKind", "PodInfo",
    "PodListener", "Resources", "SandboxState", "Source", "StatesInformer", "StaticStates", "Unsubscribe",
]
