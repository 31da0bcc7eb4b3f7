"""Hubs: what every agent shares, built by the daemon before any agent is.

One immutable value. The shared hubs are made by the daemon's composition root
(`koordlet.daemon.wiring`): the states informer every pod source feeds, the metric
cache every collector fills, the one resource executor every cgroup write goes
through (over an empty hierarchy where the host has no cgroups), the host facts, the
NodeSLO in force, the daemon's one kept-fd pool and its metrics registry, and the HTTP
routes. No agent creates a hub.

Agents meet through small typed ports:
- boards the root makes, written by one agent and read by others in any build order
  (`be_suppress`: the QoS manager's BE CPU decision, read by the runtime hooks);
- offers an agent makes to the agents built after it (`koordlet.ports.Ports`: the ORM's Admitter and
  CpusetProvider for the runtime hooks). `with_ports` returns a new Hubs; the registry
  order in `koordlet.agents` puts providers first.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from koordlet.config import Config
from koordlet.metriccache.store import MetricStore
from koordlet.metrics.client import CollectorRegistry
from koordlet.ports import Ports
from koordlet.ports.be_suppress import BESuppressBoard
from koordlet.server.http_endpoint import Routes
from koordlet.slo.source import ValidatedNodeSLO
from koordlet.statesinformer.store import PodStore
from koordlet.util.host_facts import HostFacts
from koordlet.util.kube_client import KubeApi
from resourceexecutor import ResourceExecutor
from system.file_io import KeptFdPool
from system.host import Host


@dataclass(frozen=True, slots=True)
class Hubs:
    config: Config
    host: Host
    facts: HostFacts
    registry: CollectorRegistry
    http: Routes
    fd_pool: KeptFdPool
    executor: ResourceExecutor
    states: PodStore
    metric_cache: MetricStore
    node_slo: ValidatedNodeSLO
    be_suppress: BESuppressBoard
    kube: KubeApi
    ports: Ports = field(default_factory=Ports)

    def with_ports(self, offers: Ports) -> Hubs:
        """These hubs with the ports an agent offers laid over the ones offered before."""
        return replace(self, ports=self.ports.overlaid(offers))
