"""The runtime hooks as a daemon module: the engine, the reconcile loop and the
NRI plugin, wired from the daemon's config, plus `GET /api/v1/pods`.

Mode (`--runtime-hooks-mode`):
- nri: NRI shapes containers; the loop writes pod and kube-QoS cgroups on every
  pass and container cgroups on its periodic read-compare pass (drift, and
  containers created while NRI was away);
- both: NRI, and the loop writes containers on every change too;
- bypass: no NRI; the loop does everything;
- auto (default): both; NRI counts for readiness only when its socket existed at
  start (the stub keeps dialing, so a runtime that comes later is still served).
Whether NRI counts is decided in `koordlet.statesinformer.sources` (`nri_wanted`),
the same rule the states informer's `synced()` uses.
/readyz counts the module ready only while NRI is connected and synchronized
when NRI counts.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Callable

import structlog

from koordlet.config import Config, defaults
from koordlet.metrics.client import CollectorRegistry
from koordlet.metrics.text import Family, escape, render_families
from koordlet.ports import Ports
from koordlet.ports.admission import ADMIT_ALL
from koordlet.ports.be_suppress import BESuppressBoard
from koordlet.ports.cpusets import NO_EXCLUSIVE_CPUS
from koordlet.runtimehooks.engine import HookEngine, plans_json_steps
from koordlet.runtimehooks.group_identity_switch import GroupIdentitySwitch, wanted_switch
from koordlet.runtimehooks.hook_config import HookConfig, HostCaps
from koordlet.runtimehooks.hooks import enabled_hooks
from koordlet.runtimehooks.hooks.cpuset_allocator import be_pool, share_pool
from koordlet.runtimehooks.nri_plugin import KoordletNriPlugin
from koordlet.runtimehooks.options import HooksOptions
from koordlet.runtimehooks.reconciler import Reconciler
from koordlet.runtimehooks.slo_rules import any_cpu_qos_enabled, hook_config_from_slo, hook_config_with_suppress
from koordlet.server.http_endpoint import Reply, json_reply_in_worker
from koordlet.slo.source import NodeSLOSource
from koordlet.statesinformer.api import StatesInformer
from koordlet.statesinformer.nri_feed import NriFeed
from koordlet.statesinformer.sources import nri_enabled, nri_wanted
from koordlet.util.host_facts import HostFacts
from koordlet.util.steps import run_steps_on_loop
from nri.stub import Stub, StubConfig
from resourceexecutor import ResourceExecutor
from system.cgroup_layout import QoSTier
from system.errors import SystemFileError

log = structlog.get_logger(__name__)

def qos_dirs_of(facts: HostFacts) -> dict[QoSTier, str]:
    """The kube QoS dirs the host has now (none until kubelet made kubepods)."""
    return dict(facts.qos_dirs())


def probe_host(facts: HostFacts) -> HookConfig:
    """Hook config with this host's CPUs and cgroup capabilities (the kube QoS dirs, where
    they exist, tell whether bvt and cpu.idle are offered)."""
    cpus = facts.online_cpus
    if not cpus:
        log.warning("runtime_hooks_cpus_unknown", error=facts.topology_error)
    if not facts.has_cgroups:
        return HookConfig(node_cpus=cpus)
    files = facts.files
    probe_dir = qos_dirs_of(facts).get(QoSTier.GUARANTEED, "")
    try:
        version = files.version_for("cpu.shares")
    except SystemFileError:
        version = 1
    bvt = files.supported("cpu.bvt_warp_ns", probe_dir) or GroupIdentitySwitch(facts.host).exists()
    caps = HostCaps(cgroup_version=version, bvt_supported=bvt,
                    cpu_idle_supported=files.supported("cpu.idle", probe_dir))
    return HookConfig(node_cpus=cpus, host=caps)


class RuntimeHooksModule:
    name = "runtimehooks"

    def __init__(self, config: Config, facts: HostFacts, states: StatesInformer, feed: NriFeed,
                 executor: ResourceExecutor, registry: CollectorRegistry | None, ports: Ports | None = None,
                 node_slo: NodeSLOSource | None = None, be_suppress: BESuppressBoard | None = None) -> None:
        self._config = config
        self._node_slo = node_slo
        self._be_suppress = be_suppress
        self._base_config = HookConfig()
        self._unsubscribe: list[Callable[[], None]] = []
        self._facts = facts
        self._gi_switch = GroupIdentitySwitch(facts.host)
        self.executor = executor
        self._registry = registry
        self._ports = ports if ports is not None else Ports()
        hooks = enabled_hooks(config.common.feature_gates.enabled)
        # the null ports are no allocator at all: None lets CreateContainer answers be reused
        provider = None if self._ports.cpusets is NO_EXCLUSIVE_CPUS else self._ports.cpusets
        self.engine = HookEngine(states, HookConfig(), hooks, provider=provider, registry=registry,
                                 node=config.common.node_name)
        self._feed = feed
        self._stopping = False
        self.reconciler: Reconciler | None = None
        self.plugin: KoordletNriPlugin | None = None
        self.stub: Stub | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.nri_on = False  # the plugin runs
        self.nri_required = False  # and readiness waits for it

    async def start(self) -> None:
        self._base_config = probe_host(self._facts)
        self.engine.set_config(self.current_rules())
        self._ports.cpusets.on_allocations_changed(self.engine.allocations_changed)
        hook_config = self.engine.config
        if self._node_slo is not None:
            self._unsubscribe.append(self._node_slo.subscribe(self._rules_changed))
        if self._be_suppress is not None:
            self._unsubscribe.append(self._be_suppress.subscribe(self._rules_changed))
        self.engine.start()
        config = self._config
        self.nri_on = nri_enabled(config)
        self.nri_required = self.nri_on and nri_wanted(config)
        loop = asyncio.get_running_loop()
        if config.common.feature_gates.enabled("CgroupReconcile"):
            self.reconciler = Reconciler(self.engine, self.executor, config[HooksOptions].runtime_hooks_reconcile_interval,
                                         qos_dirs=lambda: qos_dirs_of(self._facts), registry=self._registry,
                                         containers_on_change=config.runtime.runtime_hooks_mode != "nri" or not self.nri_on)
            self.reconciler.start()
        if self.nri_on:
            reconciler = self.reconciler
            self.plugin = KoordletNriPlugin(
                self.engine, self._feed, self.executor,
                on_synchronized=(lambda: reconciler.trigger(full=True)) if reconciler is not None else (lambda: None),
                admit=None if self._ports.admitter is ADMIT_ALL else self._ports.admitter.admit_now)
            self.stub = Stub(self.plugin, name=defaults.NRI_PLUGIN_NAME, index=config.runtime.runtime_hooks_nri_plugin_index,
                             config=StubConfig(socket_path=str(config.runtime.nri_socket_path)))
            self.plugin.stub = self.stub
            self.stub.add_ready_callback(self._nri_link)
            self._tasks.append(loop.create_task(self.stub.run()))
        log.info("runtime_hooks_started", mode=config.runtime.runtime_hooks_mode, nri=self.nri_on,
                 nri_required=self.nri_required, reconcile=self.reconciler is not None, hooks=[h.name for h in self.engine.hooks],
                 node_cpus=len(hook_config.node_cpus), cgroup_version=hook_config.host.cgroup_version,
                 bvt=hook_config.host.bvt_supported, qos_dirs=sorted(t.value for t in qos_dirs_of(self._facts)))

    def current_rules(self) -> HookConfig:
        """The probed host config with the NodeSLO in force and the BE suppress decision laid over it."""
        config = self._base_config
        if self._node_slo is not None:
            slo, in_force = self._node_slo.current(), self._node_slo.in_force()
            config = hook_config_from_slo(slo, config, in_force)
            if config.host.bvt_supported and self._config.common.feature_gates.enabled("GroupIdentity"):
                effective = self._gi_switch.apply(wanted_switch(in_force, any_cpu_qos_enabled(slo)))
                if effective != config.bvt_effective:
                    config = dataclasses.replace(config, bvt_effective=effective)
        if self._be_suppress is not None:
            config = hook_config_with_suppress(config, self._be_suppress.current())
        return config

    def _rules_changed(self, _value: object) -> None:
        """A NodeSLO reload or a new suppress decision: the engine recomputes every plan when the
        config moved, and its listeners (reconciler, NRI unsolicited updates) re-apply them."""
        before = self.engine.config
        self.engine.set_config(self.current_rules())
        if self.engine.config is not before:
            config = self.engine.config
            log.info("runtime_hooks_rules_changed", bvt={q.value: v for q, v in config.bvt.items()},
                     be_cpu_idle=config.be_cpu_idle, enable_cfs_quota=config.enable_cfs_quota,
                     be_suppress_cpus=sorted(config.be_suppress.cpus) if config.be_suppress.cpus else None,
                     be_suppress_quota_us=config.be_suppress.cfs_quota_us)

    def _nri_link(self, up: bool) -> None:
        """The informer hears when NRI is synchronized or lost (its CRI poll stands down
        or resumes); not the loss our own stop makes, which would start a CRI poll at exit."""
        if up or not self._stopping:
            self._feed.nri_connection(up)

    async def stop(self) -> None:
        self._stopping = True
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        if self.stub is not None:
            await self.stub.stop()
        if self.plugin is not None:
            await self.plugin.close()
        if self.reconciler is not None:
            await self.reconciler.stop()
        self.engine.stop()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    def ready(self) -> bool:
        if self.reconciler is not None and not self.reconciler.alive():
            return False
        return self.stub.is_ready if self.nri_required and self.stub is not None else True

    # -- GET /api/v1/pods -------------------------------------------------------------

    def render_pools(self, openmetrics: bool = False) -> bytes:
        """koordlet's cpuset pool series: the LS and BE share pools' sizes and CPUs."""
        config, allocations = self.engine.config, self.engine.index.snapshot()
        node = 'node="%s"' % escape(self._config.common.node_name)
        families = []
        for kind, pool in (("", share_pool(config, allocations)), ("be_", be_pool(config, allocations))):
            cores = Family(f"koordlet_cpuset_{kind}share_pool_cpu_cores",
                           f"the number of cpu cores of the {'BE ' if kind else ''}share pool")
            cores.add(node, len(pool))
            info = Family(f"koordlet_cpuset_{kind}share_pool_info", f"the cpus of the {'BE ' if kind else ''}share pool")
            for cpu in sorted(pool):
                info.add('%s,cpu="%d"' % (node, cpu), 1)
            families += [cores, info]
        return render_families(families, openmetrics)

    async def pods_route(self, query: str) -> Reply:
        """/api/v1/pods: built in steps and encoded in a worker (it grows with the pods)."""
        body: dict[str, Any] = await run_steps_on_loop(plans_json_steps(self.engine.plans()))
        body["nri"] = {"enabled": self.nri_on, "ready": self.stub.is_ready if self.stub is not None else False}
        if self.reconciler is not None and self.reconciler.last is not None:
            last = self.reconciler.last
            body["reconcile"] = {"passes": self.reconciler.passes, "lastFull": last.full, "lastWrites": last.writes,
                                 "lastUpdates": last.updates, "lastSeconds": last.seconds}
        return await json_reply_in_worker(body)
