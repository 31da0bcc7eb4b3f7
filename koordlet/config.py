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

from koordlet import __version__, defaults
from koordlet.features import FeatureGateError, FeatureGates, describe, parse_bool, parse_feature_gates, resolve


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


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


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
