"""CreateContainer on a real containerd over CRI: no NRI plugin, an empty Go NRI plugin, koordlet.

    python -m bench.cri_create [--cri /run/containerd/containerd.sock] \\
        --containerd-log /var/log/containerd.log --go-plugin /path/to/empty-go-plugin \\
        [--image registry.k8s.io/pause:3.10.2] [--pods 10] [--creates 100] [--rounds 3] [--loads 0,2]

What a kubelet sees: the CRI CreateContainer round trip of a running containerd (which calls
every registered NRI plugin in it), timed here in three set-ups, interleaved round by round
in a rotating order so that a slow moment of the host falls on each alike:
- none: no plugin registered: containerd's own cost, the floor;
- go: an NRI plugin written in Go on containerd's own stub (github.com/containerd/nri
  pkg/stub) whose CreateContainer returns no adjustment; `--go-plugin` is its command line
  (build one locally; nothing of it is in this project), started with `-idx` and `-name`;
- pyempty: the same empty plugin on this project's NRI stub (bench.daemon_scale's floor
  plugin): what the stub and Python cost before koordlet's policy;
- koordlet: this daemon as deployed (standalone, every default agent, the real cgroup root),
  answering with the adjustments its policy makes for the bench's pods;
- baseline (with `--baseline CHECKOUT`): the same daemon run from another checkout of this
  project (e.g. main beside a branch), in the same rounds: an A/B of two koordlets.

"added" is the median over rounds of a set-up's p50 (p99) minus the floor's in the same
round; the figure of issue 18 is koordlet's added over Go's added (target <= 0.9, quiet and under load). `--loads` runs
the rounds again beside that many busy-looping processes (a loaded node).

Before the rounds, `--pods` pod sandboxes (host network, so no CNI is needed; half BE with
batch resources, half LS, as bench.daemon_scale's mix) are run and kept: the pods the
plugins know. Each timed create is removed right after (untimed). A plugin counts as
registered when containerd's log says it is connected and synchronized (its NRI adaptation
logs `plugin "<index>-<name>" connected and synchronized` at info level), and as gone when
containerd logs its connection closed; hence
`--containerd-log`. Once per pass, a BE container made with koordlet registered is read
back from its cgroup (v1, cgroupfs layout): the values koordlet's BatchResource rule gives
its batch resources must be there, or the table says so: the timed creates are koordlet
doing its work, not an idle plugin. Everything the bench made is stopped and removed at
the end. With `--start` each timed container is started and stopped before its removal
(untimed), as a kubelet starts what it creates: the plugins then also hear its start.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import grpc
from prometheus_client.parser import text_string_to_metric_families

from bench.daemon_scale import EMPTY_PLUGIN, daemon_command, free_port, latency, pct, stop_process
from proto.cri import api_pb2 as cri
from proto.cri import api_pb2_grpc as cri_grpc
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec

SETUPS = ("none", "go", "pyempty", "koordlet")
BASELINE = "baseline"  # koordlet from the --baseline checkout
GO_PLUGIN_IDX, GO_PLUGIN_NAME = "50", "goempty"
KOORDLET_PLUGIN = "-koordlet_nri"  # containerd names it <index>-<koordlet.config.defaults.NRI_PLUGIN_NAME>
WARMUP_CREATES = 5
REGISTER_TIMEOUT_S = 30.0
BURNER = "while True: pass"
# the BE pods' batch resources, and what koordlet's BatchResource hook makes of them in a
# container's cgroup (v1): shares = milli-CPU * 1024 / 1000, quota = milli-CPU * period / 1000
BATCH_MILLI_CPU, BATCH_MEMORY_MIB, CFS_PERIOD_US = 500, 512, 100000
EXPECTED_BE_CGROUP = {("cpu", "cpu.shares"): BATCH_MILLI_CPU * 1024 // 1000,
                      ("cpu", "cpu.cfs_quota_us"): BATCH_MILLI_CPU * CFS_PERIOD_US // 1000,
                      ("memory", "memory.limit_in_bytes"): BATCH_MEMORY_MIB << 20}


@dataclass(frozen=True, slots=True)
class Sandbox:
    id: str
    config: cri.PodSandboxConfig

    @property
    def be(self) -> bool:
        return self.config.labels["koordinator.sh/qosClass"] == "BE"


def sandbox_config(i: int, log_dir: Path) -> cri.PodSandboxConfig:
    """Pod i: BE with batch resources when even, LS when odd; host network."""
    uid = str(uuid.uuid4())
    be = i % 2 == 0
    qos = "BE" if be else "LS"
    annotations = {"node.koordinator.sh/extended-resource-spec": ext_spec(c=batch(str(BATCH_MILLI_CPU), "%dMi" % BATCH_MEMORY_MIB))} if be else {}
    tier = "besteffort" if be else "burstable"
    return cri.PodSandboxConfig(
        metadata=cri.PodSandboxMetadata(name="cri-bench-%d" % i, uid=uid, namespace="koordlet-bench"),
        log_directory=str(log_dir / uid),  # no hostname: the pod shares the node's UTS namespace
        labels={"koordinator.sh/qosClass": qos}, annotations=annotations,
        linux=cri.LinuxPodSandboxConfig(
            cgroup_parent="/kubepods/%s/pod%s" % (tier, uid),
            security_context=cri.LinuxSandboxSecurityContext(
                namespace_options=cri.NamespaceOption(network=cri.NODE, pid=cri.CONTAINER, ipc=cri.POD))))


def container_config(image: str, attempt: int, be: bool) -> cri.ContainerConfig:
    """As a kubelet asks: a BE container with kubelet's best-effort values (its batch
    resources are extended resources, which only koordlet turns into cgroup values); an LS
    one with a CPU and memory limit."""
    if be:
        resources = cri.LinuxContainerResources(cpu_period=CFS_PERIOD_US, cpu_shares=2)
    else:
        resources = cri.LinuxContainerResources(cpu_period=CFS_PERIOD_US, cpu_quota=CFS_PERIOD_US // 2,
                                                cpu_shares=512, memory_limit_in_bytes=512 << 20)
    return cri.ContainerConfig(
        metadata=cri.ContainerMetadata(name="c", attempt=attempt), image=cri.ImageSpec(image=image),
        command=["/pause"], log_path="c-%d.log" % attempt, linux=cri.LinuxContainerConfig(resources=resources))


def setups_of(args: argparse.Namespace) -> tuple[str, ...]:
    return SETUPS + (BASELINE,) if args.baseline else SETUPS


def order_of(round_index: int, setups: tuple[str, ...] = SETUPS) -> tuple[str, ...]:
    """The set-ups rotated by round, so none goes first every time."""
    k = round_index % len(setups)
    return setups[k:] + setups[:k]


def summary(rounds: dict[str, list[list[float]]]) -> dict[str, dict[str, float]]:
    """Per set-up: p50/p99/max over all its creates, and what it added over the floor: the
    median over rounds of its round's p50 (p99) minus the floor's p50 (p99) in that round, so
    that a slow stretch of the host counts against every set-up of the round alike."""
    out = {name: latency([us for one in per_round for us in one]) for name, per_round in rounds.items()}
    floor = rounds["none"]
    for name in rounds:
        if name == "none":
            continue
        for q, at in (("p50", 0.5), ("p99", 0.99)):
            added = [pct(ours, at) - pct(base, at) for ours, base in zip(rounds[name], floor)]
            out[name]["added_%s_us" % q] = statistics.median(added) if added else float("nan")
    return out


def ratios(figures: dict[str, dict[str, float]], setup: str = "koordlet") -> dict[str, float]:
    """`setup`'s added latency over the Go plugin's, at p50 and p99 (NaN unless both added some)."""
    go, ours = figures["go"], figures[setup]
    out = {}
    for q in ("p50", "p99"):
        theirs, mine = go["added_%s_us" % q], ours["added_%s_us" % q]
        out[q] = mine / theirs if theirs > 0 and mine > 0 else float("nan")
    return out


# -- IO ---------------------------------------------------------------------------------


class ContainerdLog:
    """Waits for lines containerd appends to its log after the moment of `mark()`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def mark(self) -> None:
        self.offset = self.path.stat().st_size

    def wait_for(self, needle: str, alive: Callable[[], bool], timeout: float = REGISTER_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                if needle.encode() in f.read():
                    return
            if not alive():
                raise RuntimeError("plugin exited before containerd logged %r" % needle)
            time.sleep(0.05)
        raise RuntimeError("containerd did not log %r within %.0f s" % (needle, timeout))


def plugin_name(setup: str) -> str:
    """How containerd names the set-up's plugin (its index, a dash, its name), or its end."""
    return {"go": "%s-%s" % (GO_PLUGIN_IDX, GO_PLUGIN_NAME), "pyempty": "-" + EMPTY_PLUGIN,
            "koordlet": KOORDLET_PLUGIN, BASELINE: KOORDLET_PLUGIN}.get(setup, "")


class Plugin:
    """One set-up's NRI plugin process (none for the floor)."""

    def __init__(self, setup: str, args: argparse.Namespace, tmp: Path, log: ContainerdLog) -> None:
        self.setup, self.args, self.tmp, self.log = setup, args, tmp, log
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        if self.setup == "pyempty":
            return [sys.executable, "-m", "bench.daemon_scale", "--serve-empty", self.args.nri_socket]
        if self.setup == "go":
            return shlex.split(self.args.go_plugin) + ["-idx", GO_PLUGIN_IDX, "-name", GO_PLUGIN_NAME,
                                                       "-socket", self.args.nri_socket]
        state = self.tmp / "koordlet"
        state.mkdir(exist_ok=True)
        return daemon_command(state, free_port(), Path(self.args.nri_socket), Path(self.args.cgroup_root))

    def __enter__(self) -> "Plugin":
        if self.setup == "none":
            return self
        self.log.mark()
        where: dict = {}
        if self.setup == BASELINE:  # the other checkout's code, imported from there
            where = {"cwd": self.args.baseline, "env": {**os.environ, "PYTHONPATH": str(self.args.baseline)}}
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **where)
        try:
            self.log.wait_for('%s\\" connected and synchronized' % plugin_name(self.setup),
                              lambda: self.proc.poll() is None)
        except BaseException:
            stop_process(self.proc)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        self.log.mark()
        stop_process(self.proc)
        self.log.wait_for('%s\\" closed' % plugin_name(self.setup), lambda: True)


def create_request(sandbox: Sandbox, image: str, attempts: list[int]) -> cri.CreateContainerRequest:
    """The sandbox's next container (a new attempt number: names never repeat)."""
    attempts[0] += 1
    return cri.CreateContainerRequest(pod_sandbox_id=sandbox.id, config=container_config(image, attempts[0], sandbox.be),
                                      sandbox_config=sandbox.config)


def time_creates(rt: cri_grpc.RuntimeServiceStub, sandbox: Sandbox, image: str, count: int,
                 attempts: list[int], start: bool = False) -> list[float]:
    """`count` creates timed; each container removed after (untimed), with `start` first
    started and stopped, as a kubelet goes on (runc runs it, NRI's start events come)."""
    out = []
    for _ in range(count):
        request = create_request(sandbox, image, attempts)
        begin = time.perf_counter()
        reply = rt.CreateContainer(request)
        out.append((time.perf_counter() - begin) * 1e6)
        if start:
            rt.StartContainer(cri.StartContainerRequest(container_id=reply.container_id))
            rt.StopContainer(cri.StopContainerRequest(container_id=reply.container_id, timeout=0))
        rt.RemoveContainer(cri.RemoveContainerRequest(container_id=reply.container_id))
    return out


def applied_values(rt: cri_grpc.RuntimeServiceStub, sandbox: Sandbox, image: str, cgroup_root: str,
                   attempts: list[int]) -> dict[str, int | None]:
    """The cgroup values a new (started) container of the BE `sandbox` got (cgroupfs layout
    of cgroup v1: <controller>/<cgroup_parent>/<container id>); None for a file not there."""
    container_id = rt.CreateContainer(create_request(sandbox, image, attempts)).container_id
    try:
        rt.StartContainer(cri.StartContainerRequest(container_id=container_id))  # runc makes the cgroup here
        out: dict[str, int | None] = {}
        for controller, name in EXPECTED_BE_CGROUP:
            path = Path(cgroup_root, controller, sandbox.config.linux.cgroup_parent.strip("/"), container_id, name)
            out[name] = int(path.read_text()) if path.exists() else None
        return out
    finally:
        rt.StopContainer(cri.StopContainerRequest(container_id=container_id, timeout=0))
        rt.RemoveContainer(cri.RemoveContainerRequest(container_id=container_id))


def plugin_latency(text: str, plugin: str, operation: str = "CreateContainer") -> tuple[float, float]:
    """(seconds summed, calls) of containerd's own timing of `plugin`'s NRI calls of
    `operation` (containerd_nri_plugin_latency_seconds, a histogram), from its metrics text."""
    total = count = 0.0
    for family in text_string_to_metric_families(text):
        if family.name != "containerd_nri_plugin_latency_seconds":
            continue
        for sample in family.samples:
            labels = sample.labels
            if labels.get("operation") != operation or not labels.get("plugin", "").endswith(plugin):
                continue
            if sample.name.endswith("_sum"):
                total += sample.value
            elif sample.name.endswith("_count"):
                count += sample.value
    return total, count


def mean_call_us(before: tuple[float, float], after: tuple[float, float]) -> float:
    calls = after[1] - before[1]
    return (after[0] - before[0]) / calls * 1e6 if calls > 0 else float("nan")


def containerd_metrics(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.read().decode()


def burners(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(count)]


def run_load(rt: cri_grpc.RuntimeServiceStub, sandboxes: list[Sandbox], args: argparse.Namespace, tmp: Path,
             log: ContainerdLog, load: int, attempts: list[int]) -> dict:
    setups = setups_of(args)
    samples: dict[str, list[list[float]]] = {name: [] for name in setups}
    nri_call_us: dict[str, list[float]] = {name: [] for name in setups[1:]}  # containerd's timing, per round
    applied: dict[str, int | None] = {}
    busy = burners(load)
    try:
        for r in range(args.rounds):
            for setup in order_of(r, setups):
                with Plugin(setup, args, tmp, log):
                    time.sleep(args.settle if setup != "none" else 0)
                    target = sandboxes[r % len(sandboxes)]
                    time_creates(rt, target, args.image, WARMUP_CREATES, attempts, args.start)
                    timed_by_containerd = args.containerd_metrics is not None and setup != "none"
                    if timed_by_containerd:
                        before = plugin_latency(containerd_metrics(args.containerd_metrics), plugin_name(setup))
                    samples[setup].append(time_creates(rt, target, args.image, args.creates, attempts, args.start))
                    if timed_by_containerd:
                        after = plugin_latency(containerd_metrics(args.containerd_metrics), plugin_name(setup))
                        nri_call_us[setup].append(mean_call_us(before, after))
                    if setup == "koordlet" and not applied:
                        be = next(sandbox for sandbox in sandboxes if sandbox.be)
                        applied = applied_values(rt, be, args.image, args.cgroup_root, attempts)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    figures = summary(samples)
    return {"load_procs": load, "pods": len(sandboxes), "creates": args.creates, "rounds": args.rounds,
            "started": args.start,
            "loadavg_1m": os.getloadavg()[0], "setups": list(setups), **{name: figures[name] for name in setups},
            "koordlet_applied": applied,
            "koordlet_applied_as_expected": applied == {name: v for (_, name), v in EXPECTED_BE_CGROUP.items()},
            "ratio_added": ratios(figures), "ratio_added_pyempty": ratios(figures, "pyempty"),
            **({"ratio_added_baseline": ratios(figures, BASELINE)} if args.baseline else {}),
            **nri_call_figures(nri_call_us),
            # per round, for paired comparisons (e.g. koordlet against baseline round by round)
            "round_p50_us": {name: [pct(one, 0.5) for one in per_round] for name, per_round in samples.items()},
            "round_nri_call_us": nri_call_us}


def nri_call_figures(per_round: dict[str, list[float]]) -> dict:
    """containerd's own mean time of each plugin's CreateContainer call: the median over
    rounds, and koordlet's over Go's (empty without --containerd-metrics)."""
    if not all(per_round.values()):
        return {}
    medians = {name: statistics.median(us) for name, us in per_round.items()}
    return {"nri_call_mean_us": medians, "ratio_nri_call": medians["koordlet"] / medians["go"],
            "ratio_nri_call_pyempty": medians["pyempty"] / medians["go"],
            **({"ratio_nri_call_baseline": medians[BASELINE] / medians["go"]} if BASELINE in medians else {})}


def skip_reason(args: argparse.Namespace) -> str:
    """Why the bench cannot run here ('' when it can): `make bench` runs it on hosts without containerd."""
    if not Path(args.cri).exists():
        return "no containerd CRI socket at %s" % args.cri
    if args.containerd_log is None or not args.containerd_log.exists():
        return "--containerd-log names no file"
    if not args.go_plugin:
        return "no --go-plugin given"
    return ""


def print_table(rows: list[dict]) -> None:
    print("%5s %-9s %8s %8s %8s %10s %10s" % ("load", "setup", "p50 us", "p99 us", "max us", "added p50", "added p99"))
    for row in rows:
        for name in row["setups"]:
            f = row[name]
            print("%5d %-9s %8.0f %8.0f %8.0f %10s %10s" % (
                row["load_procs"], name, f["p50_us"], f["p99_us"], f["max_us"],
                "%.0f" % f["added_p50_us"] if "added_p50_us" in f else "-",
                "%.0f" % f["added_p99_us"] if "added_p99_us" in f else "-"))
        print("%5d koordlet's values in a new BE container's cgroup: %s (%s)" % (
            row["load_procs"], row["koordlet_applied"],
            "as its BatchResource rule gives" if row["koordlet_applied_as_expected"] else "NOT as expected"))
        if "nri_call_mean_us" in row:
            calls = row["nri_call_mean_us"]
            print("%5d containerd's own timing of the NRI call (mean a call, median over rounds): go %.0f us, "
                  "pyempty %.0f us, koordlet %.0f us; koordlet / Go %.2fx" % (
                      row["load_procs"], calls["go"], calls["pyempty"], calls["koordlet"], row["ratio_nri_call"]))
        print("%5d koordlet added / Go added: p50 %.2fx, p99 %.2fx (the empty Python plugin's: %.2fx, %.2fx)" % (
            row["load_procs"], row["ratio_added"]["p50"], row["ratio_added"]["p99"],
            row["ratio_added_pyempty"]["p50"], row["ratio_added_pyempty"]["p99"]))
        if "ratio_added_baseline" in row:
            print("%5d baseline (%s) added / Go added: p50 %.2fx, p99 %.2fx; containerd's NRI call %.0f us, "
                  "%.2fx Go's" % (row["load_procs"], "koordlet from the --baseline checkout",
                                  row["ratio_added_baseline"]["p50"], row["ratio_added_baseline"]["p99"],
                                  row.get("nri_call_mean_us", {}).get(BASELINE, float("nan")),
                                  row.get("ratio_nri_call_baseline", float("nan"))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cri", default="/run/containerd/containerd.sock", help="containerd's CRI (gRPC) socket path")
    parser.add_argument("--containerd-log", type=Path, help="the file containerd logs to (info level)")
    parser.add_argument("--go-plugin", help="command line of an empty Go NRI plugin")
    parser.add_argument("--nri-socket", default="/var/run/nri/nri.sock")
    parser.add_argument("--cgroup-root", default="/sys/fs/cgroup", help="koordlet's --cgroup-root-dir")
    parser.add_argument("--image", default="registry.k8s.io/pause:3.10.2", help="an image already on the node")
    parser.add_argument("--containerd-metrics", help="containerd's metrics URL (its [metrics] address + /v1/metrics): "
                        "adds containerd's own timing of each plugin's CreateContainer call")
    parser.add_argument("--pods", type=int, default=10)
    parser.add_argument("--creates", type=int, default=100, help="timed creates per set-up per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds between a plugin's registration and the timed creates (its start-up work)")
    parser.add_argument("--loads", default="0,2", help="busy-looping processes beside the rounds, per pass")
    parser.add_argument("--start", action="store_true",
                        help="start (and stop) each timed container before its removal, untimed, as a kubelet "
                             "starts what it created")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout of this project: its koordlet is one more set-up (\"baseline\"), "
                             "for an A/B of two versions in the same rounds")
    args = parser.parse_args()
    missing = skip_reason(args)
    if missing:
        print("cri_create: skipped: %s (see python -m bench.cri_create --help)" % missing)
        return
    channel = grpc.insecure_channel("unix://" + args.cri)
    rt = cri_grpc.RuntimeServiceStub(channel)
    version = rt.Version(cri.VersionRequest(version="v1"))
    print("cri_create: %s %s; %d pods kept, %d creates per set-up per round%s, %d rounds, set-ups %s" % (
        version.runtime_name, version.runtime_version, args.pods, args.creates,
        " (each started and stopped, untimed)" if args.start else "", args.rounds, ", ".join(setups_of(args))))
    log = ContainerdLog(args.containerd_log)
    rows = []
    with tempfile.TemporaryDirectory(prefix="cri-create-") as tmp_name:
        tmp = Path(tmp_name)
        sandboxes: list[Sandbox] = []
        try:
            for i in range(args.pods):
                config = sandbox_config(i, tmp / "logs")
                reply = rt.RunPodSandbox(cri.RunPodSandboxRequest(config=config))
                sandboxes.append(Sandbox(reply.pod_sandbox_id, config))
            attempts = [0]
            for load in (int(x) for x in args.loads.split(",")):
                row = run_load(rt, sandboxes, args, tmp, log, load, attempts)
                print(json.dumps(row, sort_keys=True))
                rows.append(row)
        finally:
            for sandbox in sandboxes:
                rt.StopPodSandbox(cri.StopPodSandboxRequest(pod_sandbox_id=sandbox.id))
                rt.RemovePodSandbox(cri.RemovePodSandboxRequest(pod_sandbox_id=sandbox.id))
    print_table(rows)


if __name__ == "__main__":
    main()
