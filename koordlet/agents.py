"""Every agent of the daemon, in build and start order.

Providers come before readers: the states informer's sources before everything that
reads pods; the ORM before the runtime hooks (it offers them its Admitter and
CpusetProvider ports); the QoS manager last. Each entry is the `SPEC` of an agent
package (koordlet/<agent>/agent.py); koordlet.daemon.wiring builds the enabled ones.
"""

from __future__ import annotations

from koordlet.agent import AgentSpec
from koordlet.metricsadvisor.agent import SPEC as METRICS_ADVISOR
from koordlet.orm.agent import SPEC as ORM
from koordlet.qosmanager.agent import SPEC as QOS_MANAGER
from koordlet.reporter.agent import SPEC as REPORTER
from koordlet.runtimehooks.agent import SPEC as RUNTIME_HOOKS
from koordlet.slo.agent import SPEC as NODE_SLO
from koordlet.statesinformer.agent import SPEC as STATES_INFORMER

AGENTS: tuple[AgentSpec, ...] = (
    STATES_INFORMER,
    METRICS_ADVISOR,
    NODE_SLO,
    ORM,
    RUNTIME_HOOKS,
    REPORTER,
    QOS_MANAGER,
)
