"""Katalyst's reclaimed resources: reclaimed_cores pods sized from
`reclaimed_millicpu` / `reclaimed_memory` through the resource-name map
(`reclaimed_millicpu=cpu, reclaimed_memory=memory`), the same way BatchResource
sizes BE pods from batch-cpu / batch-memory."""

from __future__ import annotations

from koordlet.apis.qos import KatalystQoSLevel
from koordlet.runtimehooks.allocations import CpuAllocations
from koordlet.runtimehooks.hook_config import HookConfig
from koordlet.runtimehooks.hooks.batch_resource import extended_spec
from koordlet.runtimehooks.spec import EMPTY_SPEC, ResourceSpec
from koordlet.statesinformer.model import ContainerInfo, PodInfo


def _mapped(config: HookConfig, native: str) -> str | None:
    for extended, target in config.reclaimed_resources.items():
        if target == native:
            return extended
    return None


def decide(pod: PodInfo, container: ContainerInfo | None, config: HookConfig,
           allocations: CpuAllocations) -> ResourceSpec:
    if pod.qos.katalyst is not KatalystQoSLevel.RECLAIMED_CORES:
        return EMPTY_SPEC
    cpu_name, memory_name = _mapped(config, "cpu"), _mapped(config, "memory")
    if cpu_name is None or memory_name is None:
        return EMPTY_SPEC
    return extended_spec(pod, container, config, cpu_name, memory_name)
