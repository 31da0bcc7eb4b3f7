"""CPUSetAllocator: which CPUs each container may run on.

LSE/LSR pods and Katalyst dedicated_cores get the CPUs bound to them (an
out-of-band allocator's, else koord-scheduler's resource-status). LS pods share
what is left after reserved, exclusive (LSE) and LSR CPUs; BE pods share that
pool plus LSR CPUs, never LSE ones. SYSTEM pods get the system QoS CPUs when
configured; while CPU suppress (cpuset policy) holds the BE tier, BE pods
get the tier's cpuset instead, as koordlet's cpuset hook does. Pods without a Koordinator class follow kubelet: with its static
CPU manager their cpuset is kubelet's, with none they share the LS pool.
Pod-level cgroups are left alone (a parent cpuset must hold its children's).
"""

from __future__ import annotations

from koordlet.apis.qos import KoordQoSClass
from koordlet.runtimehooks.allocations import CpuAllocations
from koordlet.runtimehooks.hook_config import CpuManagerPolicy, HookConfig
from koordlet.runtimehooks.spec import EMPTY_SPEC, ResourceSpec
from koordlet.statesinformer.model import ContainerInfo, PodInfo


def share_pool(config: HookConfig, allocations: CpuAllocations) -> frozenset[int]:
    return _pool(config, allocations, False)


def be_pool(config: HookConfig, allocations: CpuAllocations) -> frozenset[int]:
    return _pool(config, allocations, True)


# The pools of the latest (config, allocations) pairs, by identity: both change only when a
# rule or an exclusive binding does, and every container decided in between then holds the
# same set instead of one made for it (2,500 sets, 0.5 MiB, at 1,000 pods).
_POOLS: dict[tuple[int, int, bool], tuple[HookConfig, CpuAllocations, frozenset[int]]] = {}
_POOLS_KEPT = 8


def _pool(config: HookConfig, allocations: CpuAllocations, be: bool) -> frozenset[int]:
    key = (id(config), id(allocations), be)
    kept = _POOLS.get(key)
    if kept is not None and kept[0] is config and kept[1] is allocations:
        return kept[2]
    pool = config.node_cpus - config.reserved_cpus - allocations.exclusive
    if not be:
        pool -= allocations.reserved
    if len(_POOLS) >= _POOLS_KEPT:
        _POOLS.clear()
    _POOLS[key] = (config, allocations, pool)
    return pool


def _cpus(pod: PodInfo, container: ContainerInfo, config: HookConfig,
          allocations: CpuAllocations) -> frozenset[int] | None:
    own = allocations.own_cpus(pod, container.name)
    if own:
        return own
    qos = pod.qos.effective
    if qos is KoordQoSClass.SYSTEM:
        return config.system_qos_cpus or None
    if qos is KoordQoSClass.BE:
        # while CPU suppress shrinks the BE tier, its cpuset is theirs (a child must stay inside it)
        suppressed = config.be_suppress.cpus
        return suppressed if suppressed else be_pool(config, allocations)
    if qos is KoordQoSClass.LS or config.cpu_manager_policy is CpuManagerPolicy.NONE:
        return share_pool(config, allocations)
    return None


def decide(pod: PodInfo, container: ContainerInfo | None, config: HookConfig,
           allocations: CpuAllocations) -> ResourceSpec:
    if container is None or not config.node_cpus:
        return EMPTY_SPEC
    cpus = _cpus(pod, container, config, allocations)
    return ResourceSpec(cpuset_cpus=cpus) if cpus else EMPTY_SPEC
