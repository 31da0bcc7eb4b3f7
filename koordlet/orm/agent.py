"""The ORM agent (out-of-band resource manager), on when --topology-policy-name names a
policy. It offers the agents built after it three ports: the Admitter (the runtime hooks ask
it at NRI CreateContainer; a refusal fails the container with the reason), the
CpusetProvider (the hooks' CPUSetAllocator takes exclusive CPUs from it and hears when
they change) and the ZonesProvider (the reporter's NodeResourceTopology). `GET /api/v1/topology` shows its zones and allocations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from koordlet.agent import AgentSpec, Built
from koordlet.orm.options import OrmOptions
from koordlet.ports import Ports

if TYPE_CHECKING:
    from koordlet.hubs import Hubs


def build(hubs: Hubs) -> Built:
    # imported here: the ORM is off by default, and its module brings the QRM and PodResources
    # protos and the manager (~0.1 s of the daemon's start when nothing uses them)
    from koordlet.orm.module import OrmModule

    module = OrmModule(hubs.config, hubs.facts, hubs.states, hubs.registry)
    hubs.http.add_route("/api/v1/topology", module.zones_route)
    return Built((module,), offers=Ports(admitter=module, cpusets=module, zones=module))


SPEC = AgentSpec("orm", enabled=lambda config: bool(config[OrmOptions].topology_policy_name), build=build,
                 options=OrmOptions)
