"""koordlet's command line, carried over.

Go's flag package takes `-flag`, `--flag`, `-flag=value`, `-flag value`, and a bare
`-flag` for a boolean. koordlet's own flags come in three kinds here: the ones we have
under the same name (passed through), the ones we have under another name or unit
(rewritten), and the ones for features we do not have (accepted and ignored, one notice
each). klog's logging flags are accepted and ignored the same way: logging is set by
--log-level and --log-format.

`normalize(argv, ours)` is pure: it returns the argv argparse should see and the notices
to log once logging is set up. Tokens it does not recognise pass unchanged, so argparse
still refuses an unknown flag with one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from koordlet.config.parsers import parse_duration

_BOOL_WORDS = frozenset({"true", "false", "1", "0", "t", "f", "yes", "no", "on", "off", "TRUE", "FALSE", "True",
                         "False"})


def _seconds(text: str) -> str:
    return repr(parse_duration(text))


def _whole_seconds(text: str) -> str:
    return str(round(parse_duration(text)))


@dataclass(frozen=True, slots=True)
class KoordletFlag:
    name: str  # koordlet's flag
    ours: str | None  # the flag it sets here; None: accepted and ignored
    why: str  # README's "what we do with it"
    convert: Callable[[str], str] | None = None  # koordlet's value to ours (units)
    boolean: bool = False


def _renamed(name: str, ours: str, why: str, convert: Callable[[str], str] | None = None) -> KoordletFlag:
    return KoordletFlag(name, ours, why, convert)


def _ignored(names: str, why: str, boolean: bool = False) -> tuple[KoordletFlag, ...]:
    return tuple(KoordletFlag(name, None, why, None, boolean) for name in names.split())


# koordlet's flags that are not ours under the same name (ours: README's flag table)
KOORDLET_FLAGS: tuple[KoordletFlag, ...] = (
    _renamed("collect-res-used-interval", "collect-res-used-interval-seconds", "sets it (Go duration to seconds)",
             _seconds),
    _renamed("psi-collector-interval", "psi-collector-interval-seconds", "sets it (Go duration to seconds)", _seconds),
    _renamed("cpi-collector-interval", "cpi-collector-interval-seconds", "sets it (Go duration to seconds)", _seconds),
    _renamed("collect-cpi-timewindow", "collect-cpi-timewindow-seconds", "sets it (Go duration to seconds)", _seconds),
    _renamed("kubelet-sync-interval", "states-kubelet-sync-interval", "sets it"),
    _renamed("kubelet-sync-timeout", "states-kubelet-sync-timeout", "sets it"),
    _renamed("report-interval", "report-interval-seconds", "sets it (deprecated in koordlet too)", _whole_seconds),
    _renamed("containerd-endpoint", "cri-endpoint", "sets it"),
    _renamed("var-lib-kubelet-dir", "kubelet-root-dir", "sets it"),
    *_ignored("enable-pprof", "ignored: no pprof in Python (profile with py-spy)", boolean=True),
    *_ignored("pprof-addr", "ignored: no pprof in Python (profile with py-spy)"),
    *_ignored("configmap-name configmap-namespace",
              "ignored: the slo-controller's ConfigMap is not read; the NodeSLO is"),
    *_ignored("audit-log-dir audit-verbose audit-max-disk-space-mb audit-max-concurrent-readers "
              "audit-max-events-limit", "ignored: no audit log (gate AuditEvents)"),
    *_ignored("tsdb-path tsdb-retention-duration tsdb-stripe-size tsdb-max-bytes tsdb-wal-segment-size "
              "tsdb-max-block-chunk-segment-size tsdb-min-block-duration tsdb-max-block-duration "
              "tsdb-head-chunks-write-buffer-size",
              "ignored: the metric cache is SQLite under --state-dir, kept by --metric-expire-seconds"),
    *_ignored("tsdb-enable-prometheus-metric",
              "ignored: the metric cache is SQLite under --state-dir, kept by --metric-expire-seconds", boolean=True),
    *_ignored("collect-sys-metric-outdated-interval", "ignored: stale samples are dropped by age per metric"),
    *_ignored("collect-node-cpu-info-interval collect-node-storage-info-interval",
              "ignored: the CPU topology is read at start; no storage info collector"),
    *_ignored("coldpage-collector-interval resctrl-collector-interval",
              "ignored: no cold page or resctrl collector (gates ColdPageCollector, ResctrlCollector)"),
    *_ignored("enable-pagecache-collector enable-resctrl-collector",
              "ignored: no page cache or resctrl collector", boolean=True),
    *_ignored("prediction-checkpoint-filepath prediction-cold-start-duration prediction-safety-margin-percent "
              "prediction-memory-histogram-decay-halflife prediction-cpu-histogram-decay-halflife "
              "prediction-training-interval prediction-model-expiration-duration "
              "prediction-model-checkpoint-interval prediction-model-checkpoint-max-per-step",
              "ignored: no peak prediction"),
    *_ignored("only-evict-by-api", "ignored: cluster mode evicts through the API only; standalone kills only with "
              "--qos-standalone-eviction", boolean=True),
    *_ignored("qos-extension-plugins", "ignored: no QoS extension plugins"),
    *_ignored("resource-force-update-seconds",
              "ignored: the reconcile loop re-reads every file each --runtime-hooks-reconcile-interval"),
    *_ignored("runtime-hooks-network runtime-hooks-addr runtime-hooks-host-endpoint runtime-hooks-failure-policy "
              "runtime-hooks-plugin-failure-policy runtime-hooks-config-path",
              "ignored: no koord-runtime-proxy server; the hooks run as an NRI plugin or in bypass mode"),
    *_ignored("runtime-hooks-nri-connect-timeout runtime-hooks-nri-backoff-duration runtime-hooks-nri-backoff-cap "
              "runtime-hooks-nri-backoff-steps runtime-hooks-nri-backoff-factor",
              "ignored: the NRI stub watches the socket and reconnects as soon as it is back"),
    *_ignored("runtime-hooks-nri-plugin-name", "ignored: the plugin registers as koordlet_nri"),
    *_ignored("runtime-hooks-disable-stages", "ignored: hooks are switched by their gates"),
    *_ignored("disable-unset-cpu-quota", "ignored: BE quotas follow the CPU suppress decision", boolean=True),
    *_ignored("kubelet-preferred-address-type kubelet-read-only-port",
              "ignored: kubelet's address, port and scheme are --kubelet-pods-url's"),
    *_ignored("disable-query-kubelet-config", "ignored: kubelet's /configz is not read", boolean=True),
    *_ignored("node-topology-sync-interval", "ignored: no NodeResourceTopology report yet"),
    *_ignored("enable-node-metric-report", "ignored: use --feature-gates NodeMetricReport=false", boolean=True),
    *_ignored("enable-pod-taskids xpu-enforce-collect-from-device-infos", "ignored: not implemented", boolean=True),
    *_ignored("xpu-device-infos-dir hami-core-library-directory-path pod-resources-proxy-path",
              "ignored: no accelerator support"),
    *_ignored("sys-fs-root-dir", "ignored: resctrl is found under --sys-root-dir"),
    *_ignored("var-run-root-dir run-root-dir", "ignored: sockets are given by their own flags"),
    *_ignored("docker-endpoint pouch-endpoint default-runtime-type", "ignored: containerd only"),
)

# klog's flags (Go's underscore spelling; dashes accepted too) and whether each is boolean
KLOG_FLAGS: Mapping[str, bool] = {
    "logtostderr": True, "alsologtostderr": True, "add_dir_header": True, "skip_headers": True,
    "skip_log_headers": True, "one_output": True, "legacy_stderr_threshold_behavior": True,
    "v": False, "vmodule": False, "log_dir": False, "log_file": False, "log_file_max_size": False,
    "stderrthreshold": False, "log_backtrace_at": False, "log-flush-frequency": False,
}
KLOG_WHY = "ignored: logging is set by --log-level and --log-format"

_CARRIED = {flag.name: flag for flag in KOORDLET_FLAGS}
_ALWAYS = frozenset({"help", "version", "config"})


def _klog_name(name: str) -> str | None:
    for candidate in (name, name.replace("-", "_")):
        if candidate in KLOG_FLAGS:
            return candidate
    return None


def _known(name: str, ours: Mapping[str, bool]) -> bool:
    return name in ours or name in _CARRIED or name in _ALWAYS or _klog_name(name) is not None


class _Tokens:
    def __init__(self, argv: Sequence[str]) -> None:
        self.items = list(argv)
        self.at = 0

    def take(self) -> str | None:
        if self.at >= len(self.items):
            return None
        self.at += 1
        return self.items[self.at - 1]

    def rest(self) -> list[str]:
        rest, self.at = self.items[self.at:], len(self.items)
        return rest

    def value(self, inline: str | None, boolean: bool) -> str | None:
        """A flag's value: after `=`, else the next token (a boolean takes only a boolean
        word there, and is true without one)."""
        if inline is not None:
            return inline
        following = self.items[self.at] if self.at < len(self.items) else None
        if following is not None and (following in _BOOL_WORDS or not boolean and not following.startswith("--")):
            self.at += 1
            return following
        return "true" if boolean else None


def normalize(argv: Sequence[str], ours: Mapping[str, bool]) -> tuple[list[str], list[str]]:
    """(argv for argparse, notices). `ours`: our flag names -> whether each is boolean."""
    out: list[str] = []
    notices: dict[str, str] = {}  # one per flag, however often it is given
    tokens = _Tokens(argv)
    while (token := tokens.take()) is not None:
        if token == "--":
            out += [token, *tokens.rest()]
            break
        name, has_value, inline = token.lstrip("-").partition("=")
        if not token.startswith("-") or token in ("-", "-h") or token.startswith("---") or not _known(name, ours):
            out.append(token)
            continue
        value = inline if has_value else None
        if name in ours or name in _ALWAYS:
            boolean = ours.get(name, False)
            out.append(f"--{name}={tokens.value(value, True)}" if boolean else
                       f"--{name}" + (f"={value}" if value is not None else ""))
            continue
        klog = _klog_name(name)
        if klog is not None:
            given = tokens.value(value, KLOG_FLAGS[klog])
            notices.setdefault(klog, f"klog flag -{klog}={given} {KLOG_WHY}")
            continue
        flag = _CARRIED[name]
        given = tokens.value(value, flag.boolean)
        if flag.ours is None:
            notices.setdefault(name, f"koordlet flag --{name} {flag.why}")
        elif given is None:
            out.append(f"--{flag.ours}")  # argparse says the value is missing
        else:
            out.append(f"--{flag.ours}={_converted(flag, given)}")
    return out, list(notices.values())


def _converted(flag: KoordletFlag, given: str) -> str:
    if flag.convert is None:
        return given
    try:
        return flag.convert(given)
    except ValueError:
        return given  # our own parser then refuses it with the flag's name


def koordlet_flag_rows(ours: Iterable[str]) -> list[str]:
    """README's table of koordlet's flags: the ones we have by name, then the others."""
    rows = [f"| `--{name}` | {_SAME_NAME_NOTES.get(name, 'same flag')} |"
            for name in sorted(KOORDLET_SAME_NAME & set(ours))]
    rows += [f"| `--{flag.name}` | " + (f"`--{flag.ours}`: {flag.why}" if flag.ours else flag.why) + " |"
             for flag in KOORDLET_FLAGS]
    rows.append(f"| klog's `-v`, `--logtostderr`, `--alsologtostderr`, `--vmodule`, `--log_dir`, ... | {KLOG_WHY} |")
    return rows


# koordlet's flags we have under the same name (from its flag definitions)
KOORDLET_SAME_NAME = frozenset({
    "addr", "feature-gates", "cgroup-root-dir", "proc-root-dir", "sys-root-dir", "metric-expire-seconds",
    "metric-gc-interval-seconds", "runtime-hooks-nri-socket-path", "runtime-hooks-nri-plugin-index",
    "enable-nri-runtime-hook", "runtime-hooks-reconcile-interval", "reconcile-interval-seconds",
    "cpu-suppress-interval-seconds", "cpu-evict-interval-seconds", "memory-evict-interval-seconds",
    "memory-evict-cool-time-seconds", "cpu-evict-cool-time-seconds", "kubelet-insecure-tls",
})
# Same name, not quite the same meaning
_SAME_NAME_NOTES = {
    "kubelet-insecure-tls": "same flag, narrower: an https --kubelet-pods-url is not verified (koordlet never "
                            "verifies kubelet's certificate; true there also means http on --kubelet-read-only-port: "
                            "give an http:// --kubelet-pods-url for that)",
}

