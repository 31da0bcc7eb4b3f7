"""The daemon's configuration: command-line flags, an optional YAML/JSON file
with the same keys, and the rule that flags win over the file.

`parse_args(argv)` is the whole story; it returns a frozen `Config` or raises
`ConfigError` with a message fit for the user.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import yaml

from koordlet import __version__
from koordlet.config import defaults
from koordlet.reporter.katalyst_metrics import parse_cpu_metrics, parse_memory_metrics
from koordlet.config.features import FeatureGateError, FeatureGates, describe, parse_bool, parse_feature_gates, resolve


class ConfigError(ValueError):
    """The configuration cannot be used; the message says why."""


LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("auto", "json", "console")
RUNTIME_HOOKS_MODES = ("auto", "nri", "bypass", "both")


@dataclass(frozen=True, slots=True)
class Config:
    addr: str = defaults.ADDR
    feature_gates: FeatureGates = field(default_factory=resolve)
    cgroup_root_dir: Path = defaults.CGROUP_ROOT_DIR
    proc_root_dir: Path = defaults.PROC_ROOT_DIR
    sys_root_dir: Path = defaults.SYS_ROOT_DIR
    nri_socket: Path = defaults.NRI_SOCKET
    state_dir: Path = defaults.STATE_DIR
    node_name: str = ""
    kubeconfig: Path | None = None
    log_level: str = defaults.LOG_LEVEL
    log_format: str = defaults.LOG_FORMAT
    config_file: Path | None = None
    node_slo_config: Path | None = None
    qos_standalone_eviction: bool = False
    cpu_suppress_interval_seconds: int = defaults.CPU_SUPPRESS_INTERVAL_SECONDS
    cpu_evict_interval_seconds: int = defaults.CPU_EVICT_INTERVAL_SECONDS
    memory_evict_interval_seconds: int = defaults.MEMORY_EVICT_INTERVAL_SECONDS
    reconcile_interval_seconds: int = defaults.RECONCILE_INTERVAL_SECONDS
    memory_evict_cool_time_seconds: int = defaults.MEMORY_EVICT_COOL_TIME_SECONDS
    cpu_evict_cool_time_seconds: int = defaults.CPU_EVICT_COOL_TIME_SECONDS
    enable_nri_runtime_hook: bool = True
    runtime_hooks_nri_socket_path: Path | None = None  # None: --nri-socket (its older name)
    runtime_hooks_nri_plugin_index: str = defaults.NRI_PLUGIN_INDEX
    runtime_hooks_mode: str = defaults.RUNTIME_HOOKS_MODE
    runtime_hooks_reconcile_interval: float = defaults.RUNTIME_HOOKS_RECONCILE_INTERVAL_SECONDS
    cri_endpoint: str = defaults.CRI_ENDPOINT
    states_cri_sync_interval: float = defaults.STATES_CRI_SYNC_INTERVAL_SECONDS
    kubelet_pods_url: str = ""
    states_kubelet_sync_interval: float = defaults.STATES_KUBELET_SYNC_INTERVAL_SECONDS
    topology_policy_name: str = defaults.TOPOLOGY_POLICY_NAME
    topology_manager_scope: str = defaults.TOPOLOGY_MANAGER_SCOPE
    numeric_align_resources: tuple[str, ...] = tuple(defaults.NUMERIC_ALIGN_RESOURCES.split(","))
    pod_resources_server_endpoint: Path = Path(defaults.POD_RESOURCES_SERVER_ENDPOINT.removeprefix("unix:"))
    orm_devices_provider: str = defaults.ORM_DEVICES_PROVIDER
    orm_kubelet_pod_resources_endpoints: tuple[str, ...] = (defaults.ORM_KUBELET_POD_RESOURCES_ENDPOINTS,)
    orm_resource_names_map: Mapping[str, str] = field(default_factory=dict)
    orm_reconcile_period: float = defaults.ORM_RECONCILE_PERIOD_SECONDS
    qrm_socket_dirs: tuple[Path, ...] = (Path(defaults.QRM_SOCKET_DIRS),)
    reserved_cpus: frozenset[int] = frozenset()
    cpu_manager_policy: str = defaults.CPU_MANAGER_POLICY
    pod_resources_socket_group: int | None = None

    @property
    def nri_socket_path(self) -> Path:
        """The NRI socket: --runtime-hooks-nri-socket-path, else --nri-socket."""
        return self.runtime_hooks_nri_socket_path or self.nri_socket
    collect_res_used_interval_seconds: float = defaults.COLLECT_RES_USED_INTERVAL_SECONDS
    psi_collector_interval_seconds: float = defaults.PSI_COLLECTOR_INTERVAL_SECONDS
    cpi_collector_interval_seconds: float = defaults.CPI_COLLECTOR_INTERVAL_SECONDS
    collect_cpi_timewindow_seconds: float = defaults.COLLECT_CPI_TIMEWINDOW_SECONDS
    metric_expire_seconds: float = defaults.METRIC_EXPIRE_SECONDS
    pod_metric_expire_seconds: float = defaults.POD_METRIC_EXPIRE_SECONDS
    container_metric_expire_seconds: float = defaults.CONTAINER_METRIC_EXPIRE_SECONDS
    metric_gc_interval_seconds: float = defaults.METRIC_GC_INTERVAL_SECONDS
    # reports (issue 11); Katalyst's flags keep their spelling, capitals included
    sysadvisor_plugins: tuple[str, ...] = defaults.SYSADVISOR_PLUGINS
    realtime_overcommit_sync_period: float = defaults.REALTIME_OVERCOMMIT_SYNC_PERIOD_SECONDS
    realtime_overcommit_CPU_targetload: float = defaults.REALTIME_OVERCOMMIT_CPU_TARGETLOAD
    realtime_overcommit_mem_targetload: float = defaults.REALTIME_OVERCOMMIT_MEM_TARGETLOAD
    realtime_overcommit_estimated_cpuload: float = defaults.REALTIME_OVERCOMMIT_ESTIMATED_CPULOAD
    realtime_overcommit_estimated_memload: float = defaults.REALTIME_OVERCOMMIT_ESTIMATED_MEMLOAD
    CPU_metrics_to_gather: tuple[str, ...] = defaults.CPU_METRICS_TO_GATHER
    memory_metrics_to_gather: tuple[str, ...] = defaults.MEMORY_METRICS_TO_GATHER
    report_interval_seconds: int = defaults.REPORT_INTERVAL_SECONDS
    aggregate_duration_seconds: int = defaults.AGGREGATE_DURATION_SECONDS
    aggregate_durations: tuple[float, ...] = defaults.AGGREGATE_DURATIONS_SECONDS
    cpu_reclaim_threshold_percent: int = defaults.CPU_RECLAIM_THRESHOLD_PERCENT
    memory_reclaim_threshold_percent: int = defaults.MEMORY_RECLAIM_THRESHOLD_PERCENT
    kubelet_root_dir: Path = defaults.KUBELET_ROOT_DIR
    report_output_file: Path | None = None

    def sysadvisor_plugin_enabled(self, name: str) -> bool:
        """Katalyst's plugin list: "*" turns on the default plugins, "name" one, "-name" turns one off."""
        if "-" + name in self.sysadvisor_plugins:
            return False
        return name in self.sysadvisor_plugins or "*" in self.sysadvisor_plugins

    @property
    def standalone(self) -> bool:
        """No API server to talk to: no kubeconfig and not running in a pod."""
        return self.kubeconfig is None and not in_pod()


def in_pod(environ: Mapping[str, str] = os.environ) -> bool:
    return "KUBERNETES_SERVICE_HOST" in environ


def parse_duration(text: str) -> float:
    """A duration in seconds from "10s", "500ms", "1m30s", "2h" or a bare number of seconds."""
    stripped = text.strip()
    try:
        seconds = float(stripped)
    except ValueError:
        seconds = _sum_of_parts(text, stripped)
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"duration {text!r} must be finite and not negative")
    return seconds


def _sum_of_parts(text: str, rest: str) -> float:
    total = 0.0
    if not rest:
        raise ValueError("an empty duration (use e.g. 10s, 500ms, 1m30s)")
    while rest:
        match = _DURATION_PART.match(rest)
        if match is None:
            raise ValueError(f"{text!r} is not a duration (use e.g. 10s, 500ms, 1m30s)")
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        rest = rest[match.end():]
    return total


def parse_plugin_index(text: str) -> str:
    """An NRI plugin index: exactly two digits ("00"-"99")."""
    if len(text) != 2 or not text.isdigit() or not text.isascii():
        raise ValueError(f"{text!r} is not a two-digit plugin index (00-99)")
    return text
def parse_positive_duration(text: str) -> float:
    """parse_duration, and more than zero (an interval to sleep between polls)."""
    seconds = parse_duration(text)
    if seconds <= 0:
        raise ValueError(f"duration {text!r} must be more than zero")
    return seconds


def parse_flag_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"{text!r} is not a boolean (use true or false)")


def parse_topology_policy(text: str) -> str:
    """A topology policy name; empty turns the ORM off, an unknown name is an error."""
    from koordlet.topology.policy import PolicyError, parse_policy_name

    if not text.strip():
        return ""
    try:
        return parse_policy_name(text).value
    except PolicyError as exc:
        raise ValueError(str(exc)) from None


def parse_unix_endpoint(text: str) -> Path:
    """"unix:/path", "unix:///path" or "/path" -> Path; other schemes are an error."""
    body = text.strip()
    for prefix in ("unix://", "unix:"):
        if body.startswith(prefix):
            body = body[len(prefix):]
            break
    if not body.startswith("/"):
        raise ValueError(f"{text!r} is not a unix socket endpoint (use unix:/absolute/path)")
    return Path(body)


def parse_list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def parse_paths(text: str) -> tuple[Path, ...]:
    return tuple(Path(part) for part in parse_list(text))


def parse_cpu_list(text: str) -> frozenset[int]:
    from system.cpuset import parse_cpuset
    from system.errors import InvalidValue

    try:
        return parse_cpuset(text)
    except InvalidValue as exc:
        raise ValueError(str(exc)) from None


def parse_group(text: str) -> int:
    """A group id from a number or a group name known to this host."""
    import grp

    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    try:
        return grp.getgrnam(stripped).gr_gid
    except KeyError:
        raise ValueError(f"no group named {stripped!r}") from None


def parse_names_map(text: str) -> Mapping[str, str]:
    from koordlet.orm.requests import parse_resource_names_map

    return parse_resource_names_map(text)


def parse_positive_seconds(text: str) -> float:
    """A number of seconds > 0 (koordlet's *-seconds flags are plain numbers)."""
    try:
        seconds = float(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{text!r} must be a positive number of seconds")
    return seconds


def parse_plugin_list(text: str) -> tuple[str, ...]:
    """Katalyst's --sysadvisor-plugins: comma-separated names, "-name" to turn one off, "*"."""
    items = tuple(item.strip() for item in text.split(",") if item.strip())
    for item in items:
        if not _PLUGIN_ITEM.match(item):
            raise ValueError(f"{item!r} is not a plugin name (use e.g. *,-overcommit_aware)")
    return items


def parse_load(text: str) -> float:
    """A load fraction in (0, 1]."""
    return _checked(_convert(text, float, "a number"), lambda v: 0 < v <= 1, "above 0 and at most 1")


def parse_percent(text: str) -> int:
    return _checked(_convert(text, int, "a whole number"), lambda v: 0 <= v <= 100, "within 0..100")


def parse_positive_int(text: str) -> int:
    return _checked(_convert(text, int, "a whole number"), lambda v: v > 0, "positive")


def _convert(text: str, kind: Callable[[str], Any], what: str) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{text!r} is not {what}") from None


def _checked(value: Any, ok: Callable[[Any], bool], rule: str) -> Any:
    if not ok(value):
        raise ValueError(f"{value!r} must be {rule}")
    return value


def parse_duration_list(text: str) -> tuple[float, ...]:
    """Comma-separated durations ("5m,10m,30m"), each positive."""
    values = tuple(parse_duration(item) for item in text.split(",") if item.strip())
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"{text!r} must list positive durations (e.g. 5m,10m,30m)")
    return values


_PLUGIN_ITEM = re.compile(r"^(\*|-?[A-Za-z0-9_.-]+)$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(f"{text!r} must be a positive integer")
    return value


@dataclass(frozen=True, slots=True)
class _Option:
    key: str  # the flag without dashes, and the key in a config file
    help: str
    default: Any
    # Turns the flag's text into its value; raises ValueError with a message for the user.
    # str, int, float, Path, parse_duration, parse_flag_bool, or any such function.
    kind: Callable[[str], Any] = str
    choices: tuple[str, ...] | None = None
    shown_default: str | None = None  # how --help names a default that is computed


_OPTIONS: tuple[_Option, ...] = (
    _Option("addr", "HTTP bind address for /metrics, /healthz and /readyz ([host]:port)", defaults.ADDR),
    _Option("feature-gates", "comma-separated NAME=true|false pairs (gates listed below)", ""),
    _Option("cgroup-root-dir", "root of the cgroup filesystem", defaults.CGROUP_ROOT_DIR, Path),
    _Option("proc-root-dir", "root of procfs", defaults.PROC_ROOT_DIR, Path),
    _Option("sys-root-dir", "root of sysfs", defaults.SYS_ROOT_DIR, Path),
    _Option("nri-socket", "containerd NRI socket to register on", defaults.NRI_SOCKET, Path),
    _Option("state-dir", "directory for state that survives a restart", defaults.STATE_DIR, Path),
    _Option("node-name", "name of this node", "", shown_default="the host name"),
    _Option("kubeconfig", "kubeconfig for the API server; absent and not in a pod = standalone", None, Path),
    _Option("log-level", "log level", defaults.LOG_LEVEL, str, LOG_LEVELS),
    _Option("log-format", "auto: JSON in a pod or when not on a terminal, console otherwise",
            defaults.LOG_FORMAT, str, LOG_FORMATS),
    _Option("node-slo-config", "standalone NodeSLO: YAML/JSON spec file, reloaded on change", None, Path),
    _Option("qos-standalone-eviction", "standalone mode: let QoS eviction kill best-effort pods' processes",
            False, parse_flag_bool),
    _Option("cpu-suppress-interval-seconds", "BE CPU suppress interval", defaults.CPU_SUPPRESS_INTERVAL_SECONDS,
            _positive_int),
    _Option("cpu-evict-interval-seconds", "BE CPU evict interval", defaults.CPU_EVICT_INTERVAL_SECONDS,
            _positive_int),
    _Option("memory-evict-interval-seconds", "BE memory evict interval", defaults.MEMORY_EVICT_INTERVAL_SECONDS,
            _positive_int),
    _Option("reconcile-interval-seconds", "CPU burst, memory QoS and resctrl interval",
            defaults.RECONCILE_INTERVAL_SECONDS, _positive_int),
    _Option("memory-evict-cool-time-seconds", "quiet time after a memory eviction round",
            defaults.MEMORY_EVICT_COOL_TIME_SECONDS, _positive_int),
    _Option("cpu-evict-cool-time-seconds", "quiet time after a CPU eviction round",
            defaults.CPU_EVICT_COOL_TIME_SECONDS, _positive_int),
    _Option("enable-nri-runtime-hook", "register as containerd's NRI plugin (with the NRIRuntimeHooks gate)",
            True, parse_flag_bool),
    _Option("runtime-hooks-nri-socket-path", "NRI socket of the runtime (--nri-socket is its older name)", None,
            Path, shown_default=str(defaults.NRI_SOCKET)),
    _Option("runtime-hooks-nri-plugin-index", "NRI plugin index (two digits; lower runs first)",
            defaults.NRI_PLUGIN_INDEX, parse_plugin_index),
    _Option("runtime-hooks-mode", "nri: NRI shapes containers, the loop does pod cgroups and drift; bypass: the "
            "loop does everything; both: NRI and the loop on every change; auto: both, /readyz waiting for NRI "
            "only if its socket exists at start", defaults.RUNTIME_HOOKS_MODE, str, RUNTIME_HOOKS_MODES),
    _Option("runtime-hooks-reconcile-interval", "period of the reconcile loop's full read-compare pass",
            defaults.RUNTIME_HOOKS_RECONCILE_INTERVAL_SECONDS, parse_positive_duration, shown_default="10s"),
    _Option("cri-endpoint", "CRI runtime endpoint the states informer lists pods from; empty: off",
            defaults.CRI_ENDPOINT),
    _Option("states-cri-sync-interval", "how often the states informer lists pods over CRI",
            defaults.STATES_CRI_SYNC_INTERVAL_SECONDS, parse_positive_duration, shown_default="10s"),
    _Option("kubelet-pods-url", "kubelet's read-only /pods URL for priority and pod specs "
            "(e.g. http://127.0.0.1:10255/pods); empty: off", ""),
    _Option("states-kubelet-sync-interval", "how often the states informer reads kubelet's /pods",
            defaults.STATES_KUBELET_SYNC_INTERVAL_SECONDS, parse_positive_duration, shown_default="10s"),
    _Option("topology-policy-name", "ORM topology policy: none, best-effort, restricted, single-numa-node, "
            "numeric; empty = ORM off", defaults.TOPOLOGY_POLICY_NAME, parse_topology_policy),
    _Option("topology-manager-scope", "ORM topology scope", defaults.TOPOLOGY_MANAGER_SCOPE, str,
            ("container", "pod")),
    _Option("numeric-align-resources", "resources the numeric policy keeps on the same NUMA nodes",
            defaults.NUMERIC_ALIGN_RESOURCES, parse_list),
    _Option("pod-resources-server-endpoint", "unix socket of the ORM's PodResources v1 server",
            defaults.POD_RESOURCES_SERVER_ENDPOINT, parse_unix_endpoint),
    _Option("orm-devices-provider", "merge devices from kubelet's PodResources (kubelet) or not (\"\")",
            defaults.ORM_DEVICES_PROVIDER, str, ("", "kubelet")),
    _Option("orm-kubelet-pod-resources-endpoints", "kubelet PodResources sockets for --orm-devices-provider=kubelet",
            defaults.ORM_KUBELET_POD_RESOURCES_ENDPOINTS, parse_list),
    _Option("orm-resource-names-map", "NAME=NAME pairs mapping pod resource names to ORM resources",
            defaults.ORM_RESOURCE_NAMES_MAP, parse_names_map),
    _Option("orm-reconcile-period", "ORM reconcile period", "5s", parse_positive_duration),
    _Option("qrm-socket-dirs", "directories where QRM resource plugins register (kubelet.sock)",
            defaults.QRM_SOCKET_DIRS, parse_paths),
    _Option("reserved-cpus", "CPUs never handed out exclusively (cpu list, e.g. 0-1)",
            defaults.RESERVED_CPUS, parse_cpu_list),
    _Option("pod-resources-socket-group", "group (name or id) that may use the PodResources socket: "
            "mode 0660 instead of 0600", None, parse_group),
    _Option("cpu-manager-policy", "ORM CPU policy as kubelet names it: static also pins Guaranteed pods "
            "with whole CPUs, whatever their QoS class", defaults.CPU_MANAGER_POLICY, str, ("none", "static")),
    _Option("collect-res-used-interval-seconds", "node, pod and container usage collection interval",
            defaults.COLLECT_RES_USED_INTERVAL_SECONDS, parse_positive_seconds),
    _Option("psi-collector-interval-seconds", "PSI collection interval (gate PSICollector)",
            defaults.PSI_COLLECTOR_INTERVAL_SECONDS, parse_positive_seconds),
    _Option("cpi-collector-interval-seconds", "CPI collection interval (gate CPICollector)",
            defaults.CPI_COLLECTOR_INTERVAL_SECONDS, parse_positive_seconds),
    _Option("collect-cpi-timewindow-seconds", "how long perf counters count in each CPI round",
            defaults.COLLECT_CPI_TIMEWINDOW_SECONDS, parse_positive_seconds),
    _Option("metric-expire-seconds", "retention of node series in the metric cache",
            defaults.METRIC_EXPIRE_SECONDS, parse_positive_seconds),
    _Option("pod-metric-expire-seconds", "retention of pod series in the metric cache",
            defaults.POD_METRIC_EXPIRE_SECONDS, parse_positive_seconds),
    _Option("container-metric-expire-seconds", "retention of container series in the metric cache",
            defaults.CONTAINER_METRIC_EXPIRE_SECONDS, parse_positive_seconds),
    _Option("metric-gc-interval-seconds", "how often expired samples are dropped (memory and disk)",
            defaults.METRIC_GC_INTERVAL_SECONDS, parse_positive_seconds),
    _Option("sysadvisor-plugins", "Katalyst sysadvisor plugins: * for the defaults, -overcommit_aware turns "
            "the overcommit advisor off", ",".join(defaults.SYSADVISOR_PLUGINS), parse_plugin_list),
    _Option("realtime-overcommit-sync-period", "how often the overcommit ratios are recomputed",
            "10s", parse_duration),
    _Option("realtime-overcommit-CPU-targetload", "node CPU load the overcommit ratio aims at (Katalyst code: 0.6)",
            defaults.REALTIME_OVERCOMMIT_CPU_TARGETLOAD, parse_load),
    _Option("realtime-overcommit-mem-targetload", "node memory load the ratio aims at (Katalyst code: 0.8)",
            defaults.REALTIME_OVERCOMMIT_MEM_TARGETLOAD, parse_load),
    _Option("realtime-overcommit-estimated-cpuload", "least CPU load a pod is assumed to bring (Katalyst code: 0.4)",
            defaults.REALTIME_OVERCOMMIT_ESTIMATED_CPULOAD, parse_load),
    _Option("realtime-overcommit-estimated-memload", "least memory load a pod is assumed to bring "
            "(Katalyst code: 0.8)", defaults.REALTIME_OVERCOMMIT_ESTIMATED_MEMLOAD, parse_load),
    _Option("CPU-metrics-to-gather", "pod CPU usage for the overcommit ratio: largest of these "
            "(cpu.usage.container; load.1min/5min.container are not collected)",
            ",".join(defaults.CPU_METRICS_TO_GATHER), parse_cpu_metrics),
    _Option("memory-metrics-to-gather", "pod memory usage for the overcommit ratio "
            "(mem.usage.container; mem.rss.container is not collected)",
            ",".join(defaults.MEMORY_METRICS_TO_GATHER), parse_memory_metrics),
    _Option("report-interval-seconds", "NodeMetric report interval when the cluster object does not set one "
            "(at least 30)", defaults.REPORT_INTERVAL_SECONDS, parse_positive_int),
    _Option("aggregate-duration-seconds", "window of the NodeMetric usage averages (at least 60)",
            defaults.AGGREGATE_DURATION_SECONDS, parse_positive_int),
    _Option("aggregate-durations", "windows of the NodeMetric p50/p90/p95/p99 usages",
            "5m,10m,30m", parse_duration_list),
    _Option("cpu-reclaim-threshold-percent", "batch CPU: allocatable share not reserved (reserve = 100 - this)",
            defaults.CPU_RECLAIM_THRESHOLD_PERCENT, parse_percent),
    _Option("memory-reclaim-threshold-percent", "batch memory: allocatable share not reserved",
            defaults.MEMORY_RECLAIM_THRESHOLD_PERCENT, parse_percent),
    _Option("kubelet-root-dir", "kubelet's root dir (cpu_manager_state, memory_manager_state)",
            defaults.KUBELET_ROOT_DIR, Path),
    _Option("report-output-file", "also write the reports to this JSON file (atomically)", None, Path),
)
_BY_KEY = {option.key: option for option in _OPTIONS}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="koordlet",
        description="Node-local colocation agent: NRI plugin, cgroup QoS, metrics, topology.",
        epilog="feature gates (name=default (stage)):\n" + describe(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        argument_default=argparse.SUPPRESS,  # only flags given on the command line appear
    )
    for option in _OPTIONS:
        shown = option.shown_default or (option.default if option.default not in (None, "") else "none")
        parser.add_argument(
            f"--{option.key}",
            dest=option.key.replace("-", "_"),
            metavar=option.key.split("-")[-1].upper(),
            choices=option.choices,
            help=f"{option.help} (default: {shown})",
        )
    parser.add_argument("--config", dest="config", metavar="FILE",
                        help="YAML or JSON file with the same keys as the flags; flags win")
    parser.add_argument("--version", action="version", version=f"koordlet-py {__version__}")
    return parser


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a YAML/JSON mapping whose keys are flag names (dashes or underscores)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"config file {path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of flag names to values")
    result: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key).replace("_", "-")
        if key not in _BY_KEY:
            raise ConfigError(f"config file {path}: unknown key {raw_key!r}")
        result[key] = value
    return result


def parse_args(argv: Sequence[str] | None = None) -> Config:
    """Flags over file over defaults. Raises ConfigError on any bad value."""
    namespace = vars(build_parser().parse_args(argv))
    config_path = Path(namespace.pop("config")) if "config" in namespace else None
    merged: dict[str, Any] = load_config_file(config_path) if config_path else {}
    merged.update({key.replace("_", "-"): value for key, value in namespace.items()})
    return _build(merged, config_path)


def _build(values: Mapping[str, Any], config_path: Path | None) -> Config:
    kwargs: dict[str, Any] = {"config_file": config_path}
    for key, raw in values.items():
        option = _BY_KEY[key]
        name = key.replace("-", "_")
        if key == "feature-gates":
            kwargs[name] = _gates(raw)
        elif raw is None:
            kwargs[name] = None
        else:
            kwargs[name] = _coerce(option, raw)
    kwargs.setdefault("node_name", "")
    if not kwargs["node_name"]:
        kwargs["node_name"] = socket.gethostname()
    parse_addr(kwargs.get("addr", defaults.ADDR))
    config = Config(**kwargs)
    _check_orm(config)
    return config


def _check_orm(config: Config) -> None:
    """The ORM runs when a topology policy is named; its gates cannot turn it on without one."""
    if config.topology_policy_name:
        return
    for gate in ("OOBTopologyManager", "PodResourcesServer"):
        if config.feature_gates.enabled(gate):
            raise ConfigError(f"feature gate {gate} needs --topology-policy-name "
                              "(none, best-effort, restricted, single-numa-node or numeric)")


def _coerce(option: _Option, raw: Any) -> Any:
    if isinstance(raw, (dict, list)):
        raise ConfigError(f"{option.key}: expected a single value, got {type(raw).__name__}")
    text = str(raw).lower() if isinstance(raw, bool) else str(raw)  # YAML gives true, not "true"
    try:
        value = option.kind(text)
    except ValueError as exc:
        raise ConfigError(f"{option.key}: {exc}") from exc
    if option.choices and value not in option.choices:
        raise ConfigError(f"{option.key}: {raw!r} is not one of {', '.join(option.choices)}")
    return value


def _gates(raw: Any) -> FeatureGates:
    try:
        if isinstance(raw, dict):  # a config file may give a mapping
            return resolve({str(k): parse_bool(str(k), str(v)) for k, v in raw.items()})
        return resolve(parse_feature_gates(str(raw)))
    except FeatureGateError as exc:
        raise ConfigError(f"feature-gates: {exc}") from exc


def parse_addr(addr: str) -> tuple[str | None, int]:
    """Split `[host]:port` into (host or None for all interfaces, port)."""
    host, sep, port_text = addr.rpartition(":")
    if not sep:
        raise ConfigError(f"addr {addr!r} must be [host]:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(f"addr {addr!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"addr {addr!r}: port out of range")
    return (host or None), port
