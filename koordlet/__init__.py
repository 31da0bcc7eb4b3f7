"""The koordlet daemon: config and feature gates, module wiring, and the agents
built on the lower packages (states informer, runtime hooks, metrics, reports,
QoS strategies, topology manager, PodResources server).

It reaches the kernel only through `system` and `resourceexecutor`.
"""

__version__ = "0.1.0"
