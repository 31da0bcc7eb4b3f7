"""The ORM's options (Katalyst's names and values unless defaults.py says otherwise)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from koordlet.config import defaults
from koordlet.config.errors import ConfigError
from koordlet.config.option import option
from koordlet.config.parsers import (
    parse_cpu_list,
    parse_list,
    parse_optional_group,
    parse_pairs,
    parse_paths,
    parse_positive_duration,
    parse_unix_endpoint,
)
from koordlet.topology.policy import PolicyError, parse_policy_name

if TYPE_CHECKING:
    from koordlet.config import Config

# gates that only say what --topology-policy-name already turns on
ORM_GATES = ("OOBTopologyManager", "PodResourcesServer")


def parse_topology_policy(text: str) -> str:
    """A topology policy name; empty turns the ORM off, an unknown name is an error."""
    if not text.strip():
        return ""
    try:
        return parse_policy_name(text).value
    except PolicyError as exc:
        raise ValueError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class OrmOptions:
    topology_policy_name: str = option(
        defaults.TOPOLOGY_POLICY_NAME,
        "ORM topology policy: `none` (the ORM runs, no NUMA alignment), `best-effort`, `restricted`, "
        "`single-numa-node`, `numeric`; unset: the ORM is off; any other name is an error (exit 2)",
        parse_topology_policy, shown_default="unset (ORM off)")
    topology_manager_scope: str = option(
        defaults.TOPOLOGY_MANAGER_SCOPE, "`container` or `pod`: hints merged per container or once per pod",
        choices=("container", "pod"))
    numeric_align_resources: tuple[str, ...] = option(
        defaults.NUMERIC_ALIGN_RESOURCES, "resources the numeric policy keeps on the same NUMA nodes",
        parse_list)
    pod_resources_server_endpoint: Path = option(
        defaults.POD_RESOURCES_SERVER_ENDPOINT, "unix socket of the ORM's PodResources v1 server",
        parse_unix_endpoint, shown_default="unix:" + str(defaults.POD_RESOURCES_SERVER_ENDPOINT))
    pod_resources_socket_group: int | None = option(
        None, "group (name or id) that may use the PodResources socket: mode 0660 instead of 0600",
        parse_optional_group)
    orm_devices_provider: str = option(
        defaults.ORM_DEVICES_PROVIDER, "merge devices from kubelet's PodResources (kubelet) or not (\"\")",
        choices=("", "kubelet"))
    orm_kubelet_pod_resources_endpoints: tuple[str, ...] = option(
        defaults.ORM_KUBELET_POD_RESOURCES_ENDPOINTS,
        "kubelet PodResources sockets for --orm-devices-provider=kubelet", parse_list)
    orm_resource_names_map: Mapping[str, str] = option(
        MappingProxyType({}), "`NAME=NAME` pairs, e.g. `resource.katalyst.kubewharf.io/reclaimed_millicpu=cpu,"
        "resource.katalyst.kubewharf.io/reclaimed_memory=memory`",
        parse_pairs, shown_default="none")
    orm_reconcile_period: float = option(
        defaults.ORM_RECONCILE_PERIOD_SECONDS,
        "how often the ORM releases allocations of gone pods and admits pods it has not seen",
        parse_positive_duration, shown_default="5s")
    qrm_socket_dirs: tuple[Path, ...] = option(
        defaults.QRM_SOCKET_DIRS, "directories where QRM resource plugins register (kubelet.sock)", parse_paths)
    reserved_cpus: frozenset[int] = option(
        frozenset(), "CPUs never handed out exclusively (cpu list, e.g. `0-1`); they stay in the shared pool",
        parse_cpu_list)
    cpu_manager_policy: str = option(
        defaults.CPU_MANAGER_POLICY,
        "`static`: every Guaranteed pod's whole-CPU containers get exclusive CPUs (kubelet's static policy), "
        "not only dedicated_cores / LSE / LSR",
        choices=("none", "static"))

    def check(self, config: Config) -> None:
        """The ORM runs when a topology policy is named; its gates cannot turn it on without one."""
        if self.topology_policy_name:
            return
        for gate in ORM_GATES:
            if config.common.feature_gates.enabled(gate):
                raise ConfigError(f"feature gate {gate} needs --topology-policy-name "
                                  "(none, best-effort, restricted, single-numa-node or numeric)")

