"""The daemon-wide sections: what every agent may read (`CommonOptions`), and how the node's
container runtime is reached (`RuntimeOptions`: the states informer and the runtime hooks
both depend on it, and the daemon decides from it which pod sources to wait for)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from koordlet.config import defaults
from koordlet.config.features import FeatureGates, gates_from_text, resolve
from koordlet.config.option import option
from koordlet.config.parsers import (
    parse_bool,
    parse_optional_path,
    parse_plugin_index,
    parse_positive_int,
    parse_positive_number,
)

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("auto", "json", "console")
RUNTIME_HOOKS_MODES = ("auto", "nri", "bypass", "both")


def in_pod(environ: Mapping[str, str] = os.environ) -> bool:
    return "KUBERNETES_SERVICE_HOST" in environ


@dataclass(frozen=True, slots=True)
class CommonOptions:
    addr: str = option(
        defaults.ADDR,
        "HTTP bind address for `/metrics`, `/healthz`, `/readyz` (`[host]:port`; empty host = all interfaces)")
    feature_gates: FeatureGates = option(
        resolve(), "comma-separated NAME=true|false pairs (gates listed below)", gates_from_text,
        shown_default="none")
    cgroup_root_dir: Path = option(defaults.CGROUP_ROOT_DIR, "root of the cgroup filesystem", Path)
    proc_root_dir: Path = option(defaults.PROC_ROOT_DIR, "root of procfs", Path)
    sys_root_dir: Path = option(defaults.SYS_ROOT_DIR, "root of sysfs", Path)
    state_dir: Path = option(defaults.STATE_DIR, "directory for state that survives a restart", Path)
    node_name: str = option(
        "", "this node's name (in a pod: from the downward API)", shown_default="the host name")
    kubeconfig: Path | None = option(
        None, "kubeconfig for the API server; absent and not in a pod = standalone", parse_optional_path)
    kube_api_qps: float = option(
        defaults.KUBE_API_QPS, "requests a second the daemon's one API client sends at most (client-side, as"
        " client-go's; koordlet's flag)", parse_positive_number)
    kube_api_burst: int = option(
        defaults.KUBE_API_BURST, "requests the API client may send at once above `--kube-api-qps`",
        parse_positive_int)
    gc_young_threshold: int = option(
        defaults.GC_YOUNG_THRESHOLD, "allocations between two young garbage collections once the daemon has "
        "started (Python's own: 700); see koordlet/daemon/gc_policy.py and docs/PERFORMANCE.md",
        parse_positive_int)
    log_level: str = option(defaults.LOG_LEVEL, '`debug`, `info`, `warning`, `error`', choices=LOG_LEVELS)
    log_format: str = option(
        defaults.LOG_FORMAT, "auto: JSON in a pod or when not on a terminal, console otherwise",
        choices=LOG_FORMATS)

    @property
    def standalone(self) -> bool:
        """No API server to talk to: no kubeconfig and not running in a pod."""
        return self.kubeconfig is None and not in_pod()


@dataclass(frozen=True, slots=True)
class RuntimeOptions:
    nri_socket: Path = option(
        defaults.NRI_SOCKET, "containerd's NRI socket (older name of `--runtime-hooks-nri-socket-path`)", Path)
    enable_nri_runtime_hook: bool = option(
        True, "register as containerd's NRI plugin (with the NRIRuntimeHooks gate)", parse_bool)
    runtime_hooks_nri_socket_path: Path | None = option(
        None, "NRI socket of the runtime (--nri-socket is its older name)", parse_optional_path,
        shown_default=str(defaults.NRI_SOCKET))
    runtime_hooks_nri_plugin_index: str = option(
        defaults.NRI_PLUGIN_INDEX, "NRI plugin index (two digits; lower runs first)", parse_plugin_index)
    runtime_hooks_mode: str = option(
        defaults.RUNTIME_HOOKS_MODE,
        "`nri`: NRI shapes containers, the loop writes pod cgroups and repairs drift; `bypass`: the loop does"
        " everything; `both`: NRI and the loop on every change; `auto`: `both`, with /readyz waiting for NRI "
        "only if its socket existed at start",
        choices=RUNTIME_HOOKS_MODES)
    cri_endpoint: str = option(
        defaults.CRI_ENDPOINT,
        "CRI runtime the states informer lists pods and containers from (`unix://` path or plain path); empty"
        " = off. Unreachable is logged once and retried; a host with no socket at all counts as no pods. Where"
        " the NRI plugin runs, polled only while NRI is not connected and synchronized")

    @property
    def nri_socket_path(self) -> Path:
        """The NRI socket: --runtime-hooks-nri-socket-path, else --nri-socket."""
        return self.runtime_hooks_nri_socket_path or self.nri_socket
