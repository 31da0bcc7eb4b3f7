"""The real daemon at N pods: steady CPU, RSS, fds, /metrics, and CreateContainer latency.

    python -m bench.daemon_scale [--pods 100,1000,3000] [--warmup 20] [--window 30] [--creates 200]

For each N: start `koordlet` as its own process (every default agent, standalone: no
kubeconfig, CRI lister off, state and kubelet dirs in a temp dir; PYTHONOPTIMIZE=2 as the
image, the systemd unit and `make run` deploy it, unless the environment sets another
level: PYTHONOPTIMIZE=0 for the plain interpreter), its NRI socket on a
test runtime (nri.testing.RuntimePeer, in this process) that delivers N pods x 2
containers (RunPodSandbox, CreateContainer, StartContainer). A do-nothing plugin on the
same nri.Stub, in its own process, is registered on the same runtime: the floor.

Cgroups are real (root): one uniquely named parent per controller,
/sys/fs/cgroup/<controller>/koordlet-scale-<hex8> (cgroup2 too, at unified/), with
kubepods/{burstable,besteffort}/pod<uid>/<container id> under it. The daemon gets
--cgroup-root-dir=<tmp dir of symlinks <controller> -> that parent>, so its kubepods tree
is ours and the host's cgroups are never touched. All of it is removed at the end, also
on Ctrl-C / SIGTERM.

After --warmup seconds:
  quiet window (--window s): daemon CPU % of one core (utime+stime / wall; its kernel part,
    and the event loop's thread's part), VmRSS, fds;
  create window (--window s): --creates CreateContainer round trips spread over it, each
    to the daemon and to the empty plugin (alternating order, the runtime's event lock
    held, as containerd does); the probe container is removed again (untimed);
  then --scrapes GETs of /metrics: wall ms, daemon CPU ms around each, series (non-comment
    lines), bytes; after each, one GET as Prometheus makes it (OpenMetrics preferred, gzip
    accepted): its daemon CPU ms ("prom cpu"); VmRSS after them (what the exporters keep for
    the next scrape is in it: the RSS of a daemon Prometheus scrapes); /readyz status;
  with --scraped-creates K, another window of K CreateContainer probes while /metrics is
    scraped back to back as Prometheus asks (a render holding the GIL in a worker thread
    whenever a probe comes: the worst case);
  with --drift S, a last window of S seconds as a node lives after all that: chunks of
    --window s, each with --drift-creates probe containers created and removed and one
    /metrics GET at its end (Prometheus' pace), VmRSS read after each chunk. The RSS
    growth the issue bounds (<= 1 MiB over 10 minutes) is this window's: the quiet and
    create windows before it hold the one-time steps (the first pod churn after delivery
    grows glibc's heap once), which are a level, not a drift. The floor is the empty plugin's
    RSS read at the same moments. JSON key drift: RSS at its start, end and highest, the
    least-squares slope in MiB per 10 minutes, its CPU %, the floor's start, end and slope.
Prints one JSON line per N, then a table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from koordlet.config import defaults
from koordlet.daemon.logs import configure_logging
from nri.events import Event
from nri.loop import loop_factory, uvloop_available
from nri.stub import Stub, StubConfig
from nri.testing import PeerPlugin, RuntimePeer
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api
from tests.koordlet.runtimehooks.fixtures import batch, ext_spec
from tests.koordlet.runtimehooks.nri_pods import nri_container, nri_pod

ROOT = Path(__file__).resolve().parents[1]
CGROUP_FS = Path("/sys/fs/cgroup")
CONTROLLERS = ("blkio", "cpu", "cpuacct", "cpuset", "memory", "pids", "unified")
CONTAINERS = ("main", "sidecar")
DAEMON_PLUGIN = "koordlet_nri"
EMPTY_PLUGIN = "scale_empty"
HZ = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
CALL_TIMEOUT = 2.0
DEPLOYED_PYTHONOPTIMIZE = "2"  # what the image, the systemd unit and `make run` set

# -- pure: workload, statistics, figures, table ------------------------------------------


def workload(count: int, cpu: int) -> list[tuple[api.PodSandbox, list[api.Container]]]:
    """Half BE with batch resources, 40 % LS, 10 % LSR bound to `cpu`; two containers each."""
    out = []
    for i in range(count):
        uid = "%08x-0000-4000-8000-%012x" % (i, i)
        kind = i % 10
        if kind < 5:
            spec = ext_spec(**{name: batch("500", "512Mi") for name in CONTAINERS})
            pod = nri_pod(uid, "BE", {"node.koordinator.sh/extended-resource-spec": spec})
        elif kind < 9:
            pod = nri_pod(uid, "LS")
        else:
            pod = nri_pod(uid, "LSR", {"scheduling.koordinator.sh/resource-status": '{"cpuset": "%d"}' % cpu})
        out.append((pod, [nri_container(pod, name) for name in CONTAINERS]))
    return out


def cgroup_dirs(pods: list[tuple[api.PodSandbox, list[api.Container]]]) -> list[str]:
    """Every directory to create under each controller's parent, parents first."""
    dirs = ["kubepods", "kubepods/burstable", "kubepods/besteffort"]
    for pod, ctrs in pods:
        dirs.append(pod.linux.cgroup_parent.strip("/"))
        dirs.extend(ctr.linux.cgroups_path.strip("/") for ctr in ctrs)
    return dirs


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def latency(samples_us: list[float]) -> dict[str, float]:
    return {"p50_us": pct(samples_us, 0.5), "p99_us": pct(samples_us, 0.99),
            "max_us": max(samples_us, default=float("nan")), "n": len(samples_us)}


@dataclass(frozen=True, slots=True)
class ProcSample:
    at: float  # monotonic s
    cpu_s: float  # utime + stime
    system_s: float  # stime: the kernel's part (the cgroup files' open, read and close)
    loop_cpu_s: float  # utime + stime of the event loop's thread (the main thread); the rest is worker threads
    rss_kib: int
    hwm_kib: int
    fds: int


def cpu_percent(start: ProcSample, end: ProcSample) -> float:
    return 100.0 * (end.cpu_s - start.cpu_s) / (end.at - start.at)


def window_figures(start: ProcSample, mid: ProcSample, end: ProcSample) -> dict[str, float]:
    return {"cpu_pct_quiet": cpu_percent(start, mid), "cpu_pct_creates": cpu_percent(mid, end),
            "cpu_pct_quiet_system": 100.0 * (mid.system_s - start.system_s) / (mid.at - start.at),
            "cpu_pct_quiet_loop": 100.0 * (mid.loop_cpu_s - start.loop_cpu_s) / (mid.at - start.at),
            "rss_start_mib": start.rss_kib / 1024, "rss_end_mib": end.rss_kib / 1024,
            "rss_growth_mib": (end.rss_kib - start.rss_kib) / 1024, "hwm_mib": end.hwm_kib / 1024,
            "fds_max": max(start.fds, mid.fds, end.fds)}


def count_series(body: bytes) -> int:
    return sum(1 for line in body.splitlines() if line.strip() and not line.startswith(b"#"))


def scrape_figures(walls_ms: list[float], cpus_ms: list[float], body: bytes) -> dict[str, float]:
    return {"scrape_wall_ms_p50": pct(walls_ms, 0.5), "scrape_wall_ms_max": max(walls_ms),
            "scrape_cpu_ms_p50": pct(cpus_ms, 0.5), "series": count_series(body), "body_bytes": len(body)}


def ratios(full: dict[str, float], floor: dict[str, float]) -> dict[str, float]:
    return {"ratio_p50": full["p50_us"] / floor["p50_us"], "ratio_p99": full["p99_us"] / floor["p99_us"]}


COLUMNS = (
    ("N", "pods", "%6d"), ("load s", "load_s", "%6.1f"), ("cpu% q", "cpu_pct_quiet", "%6.2f"),
    ("sys% q", "cpu_pct_quiet_system", "%6.2f"), ("loop% q", "cpu_pct_quiet_loop", "%7.2f"), ("cpu% c", "cpu_pct_creates", "%6.2f"), ("RSS0", "rss_start_mib", "%6.1f"), ("RSS1", "rss_end_mib", "%6.1f"),
    ("RSS2", "rss_scraped_mib", "%6.1f"),
    ("HWM", "hwm_mib", "%6.1f"), ("fds", "fds_max", "%5d"), ("scr ms", "scrape_wall_ms_p50", "%7.1f"),
    ("scr cpu", "scrape_cpu_ms_p50", "%7.1f"), ("prom cpu", "prometheus_scrape_cpu_ms_p50", "%8.1f"), ("series", "series", "%7d"), ("KiB", "body_kib", "%6.0f"),
    ("ready", "readyz", "%5d"), ("cc p50", "create_p50_us", "%7.0f"), ("cc p99", "create_p99_us", "%7.0f"),
    ("cc max", "create_max_us", "%7.0f"), ("fl p50", "floor_p50_us", "%7.0f"), ("fl p99", "floor_p99_us", "%7.0f"),
    ("fl max", "floor_max_us", "%7.0f"), ("x p50", "ratio_p50", "%5.2f"), ("x p99", "ratio_p99", "%5.2f"),
)


def flat_row(result: dict) -> dict[str, float]:
    row = {k: v for k, v in result.items() if not isinstance(v, dict)}
    row.update({"create_" + k: v for k, v in result["create"].items()})
    row.update({"floor_" + k: v for k, v in result["floor"].items()})
    row["body_kib"] = result["body_bytes"] / 1024
    return row


def table(results: list[dict]) -> str:
    widths = [max(len(title), len(fmt % 0)) for title, _, fmt in COLUMNS]
    lines = [" ".join(title.rjust(w) for (title, _, _), w in zip(COLUMNS, widths))]
    for row in map(flat_row, results):
        lines.append(" ".join((fmt % row[key]).rjust(w) for (_, key, fmt), w in zip(COLUMNS, widths)))
    return "\n".join(lines)


# -- IO: /proc, HTTP ----------------------------------------------------------------------


def stat_fields(path: str) -> list[str]:
    """/proc stat fields after the command name (utime and stime are [11] and [12])."""
    return Path(path).read_text().rsplit(")", 1)[1].split()


def proc_sample(pid: int) -> ProcSample:
    fields = stat_fields(f"/proc/{pid}/stat")
    loop = stat_fields(f"/proc/{pid}/task/{pid}/stat")
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return ProcSample(at=time.monotonic(), cpu_s=(int(fields[11]) + int(fields[12])) / HZ, system_s=int(fields[12]) / HZ,
                      loop_cpu_s=(int(loop[11]) + int(loop[12])) / HZ,
                      rss_kib=int(status["VmRSS"].split()[0]), hwm_kib=int(status["VmHWM"].split()[0]),
                      fds=len(os.listdir(f"/proc/{pid}/fd")))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise ValueError("no VmRSS for pid %d" % pid)


def run_ns(pid: int) -> int:
    """Time on CPU of every thread, ns (schedstat: finer than the stat ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):  # a thread that just ended
            pass
    return total


# what Prometheus 2.x and 3.x send by default: OpenMetrics preferred, gzip accepted
PROMETHEUS_HEADERS = {"Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                                "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
                      "Accept-Encoding": "gzip"}


def http_get(url: str, timeout: float = 10.0, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- IO: the cgroup tree ------------------------------------------------------------------


class CgroupTree:
    """Real cgroups under /sys/fs/cgroup/<controller>/<name>, seen by the daemon through a
    directory of symlinks (its --cgroup-root-dir)."""

    def __init__(self, link_root: Path) -> None:
        self.name = "koordlet-scale-%s" % uuid.uuid4().hex[:8]
        self.link_root = link_root
        self.bases = [CGROUP_FS / c / self.name for c in CONTROLLERS if (CGROUP_FS / c / "cgroup.procs").exists()]

    def create(self, dirs: list[str]) -> None:
        self.link_root.mkdir(parents=True, exist_ok=True)
        for base in self.bases:
            base.mkdir()
            (self.link_root / base.parent.name).symlink_to(base)
            fill_cpuset(base)
            for rel in dirs:
                (base / rel).mkdir()
                fill_cpuset(base / rel)

    def add(self, dirs: list[str]) -> None:
        """More directories under every controller (a pod started after the tree was made)."""
        for base in self.bases:
            for rel in dirs:
                (base / rel).mkdir()
                fill_cpuset(base / rel)

    def discard(self, dirs: list[str]) -> list[str]:
        """Remove `dirs` (children before parents) under every controller."""
        problems = []
        for base in self.bases:
            for rel in sorted(dirs, key=lambda d: d.count("/"), reverse=True):
                problems += rmdir(base / rel)
        return problems

    def remove(self) -> list[str]:
        problems = []
        for base in self.bases:
            if not base.exists():
                continue
            for directory in sorted(base.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                if directory.is_dir():
                    problems += rmdir(directory)
            problems += rmdir(base)
        return problems


def fill_cpuset(directory: Path) -> None:
    for key in ("cpuset.cpus", "cpuset.mems"):
        own = directory / key
        if own.is_file() and not own.read_text().strip():
            own.write_text((directory.parent / key).read_text().strip())


def rmdir(path: Path) -> list[str]:
    try:
        path.rmdir()
        return []
    except OSError as exc:
        return ["%s: %s" % (path, exc)]


# -- IO: processes ------------------------------------------------------------------------


def daemon_command(tmp: Path, port: int, nri_socket: Path, cgroup_root: Path) -> list[str]:
    exe = Path(sys.executable).with_name("koordlet")
    head = [str(exe)] if exe.exists() else [sys.executable, "-m", "koordlet"]
    return head + [
        "--addr", "127.0.0.1:%d" % port, "--state-dir", str(tmp / "state"), "--log-level", "warning",
        "--log-format", "json", "--cgroup-root-dir", str(cgroup_root), "--runtime-hooks-nri-socket-path",
        str(nri_socket), "--cri-endpoint", "", "--kubelet-root-dir", str(tmp / "kubelet"),
        "--report-output-file", str(tmp / "report.json"),
        "--pod-resources-server-endpoint", "unix:" + str(tmp / "pod-resources.sock"),
    ]


def daemon_env() -> dict[str, str]:
    """The daemon's environment: this one, with the optimization level it is deployed with
    (deploy/Dockerfile, systemd/koordlet.service, `make run`) unless this one names a level."""
    env = dict(os.environ)
    env.setdefault("PYTHONOPTIMIZE", DEPLOYED_PYTHONOPTIMIZE)
    return env


def stop_process(proc: subprocess.Popen) -> int | None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()
    return proc.returncode


async def wait_ready(port: int, proc: subprocess.Popen, limit: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if proc.poll() is not None:
            raise RuntimeError("daemon exited with %s" % proc.returncode)
        try:
            status, _ = await asyncio.to_thread(http_get, "http://127.0.0.1:%d/readyz" % port, 1.0)
            if status == 200:
                return time.monotonic() - start
        except OSError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("daemon not ready after %.0f s" % limit)


def by_name(plugins: list[PeerPlugin], name: str) -> PeerPlugin:
    (plugin,) = [p for p in plugins if p.name == name]
    return plugin


# -- the measurement ----------------------------------------------------------------------


async def deliver(peer: RuntimePeer, pods: list[tuple[api.PodSandbox, list[api.Container]]]) -> float:
    start = time.monotonic()
    for pod, ctrs in pods:
        await peer.run_pod_sandbox(pod)
        for ctr in ctrs:
            created = await peer.create_container(pod, ctr)
            # as containerd: StartContainer before the task starts, PostStartContainer after
            await peer.container_event(Event.START_CONTAINER, pod, created)
            await peer.container_event(Event.POST_START_CONTAINER, pod, created)
    return time.monotonic() - start


async def timed_create(peer: RuntimePeer, plugin: PeerPlugin, request: api.CreateContainerRequest) -> float:
    async with peer.event_lock:
        t0 = time.perf_counter_ns()
        await plugin.call("CreateContainer", request, api.CreateContainerResponse, CALL_TIMEOUT)
        return (time.perf_counter_ns() - t0) / 1000.0


async def create_probes(peer: RuntimePeer, pods, creates: int, seconds: float) -> tuple[list[float], list[float]]:
    """`creates` probe containers spread over `seconds`; each to the daemon and the floor."""
    daemon, empty = by_name(peer.plugins, DAEMON_PLUGIN), by_name(peer.plugins, EMPTY_PLUGIN)
    full: list[float] = []
    floor: list[float] = []
    gap = seconds / creates
    start = time.monotonic()
    for k in range(creates):
        pod, _ = pods[k % len(pods)]
        ctr = nri_container(pod, "probe%d" % k)
        request = api.CreateContainerRequest(pod=pod, container=ctr)
        order = ((daemon, full), (empty, floor)) if k % 2 == 0 else ((empty, floor), (daemon, full))
        for plugin, samples in order:
            samples.append(await timed_create(peer, plugin, request))
        await peer.container_event(Event.REMOVE_CONTAINER, pod, ctr)
        await asyncio.sleep(max(0.0, start + (k + 1) * gap - time.monotonic()))
    return full, floor


async def scrapes(port: int, pid: int, count: int) -> dict[str, float]:
    """`count` plain scrapes (text format, no gzip), each followed by one as Prometheus asks.
    The pauses between them vary (0.5-1.5 s beyond the endpoint's reuse window, so that each
    scrape renders anew): a fixed pause kept meeting the same phase of the daemon's 1 s
    collection round, whose CPU the figure then included every time."""
    walls, cpus, body, prometheus_cpus = [], [], b"", []
    pauses = random.Random(count)
    url = "http://127.0.0.1:%d/metrics" % port
    for _ in range(count):
        cpu0, t0 = run_ns(pid), time.perf_counter()
        _, body = await asyncio.to_thread(http_get, url)
        walls.append((time.perf_counter() - t0) * 1000)
        cpu1 = run_ns(pid)
        cpus.append((cpu1 - cpu0) / 1e6)  # includes whatever else ran meanwhile
        await asyncio.to_thread(http_get, url, 10.0, PROMETHEUS_HEADERS)
        prometheus_cpus.append((run_ns(pid) - cpu1) / 1e6)
        await asyncio.sleep(defaults.HTTP_METRICS_REUSE_SECONDS + pauses.uniform(0.5, 1.5))
    # the RSS a scraped daemon runs at: the exporters keep what they made for the next scrape
    return {**scrape_figures(walls, cpus, body), "prometheus_scrape_cpu_ms_p50": pct(prometheus_cpus, 0.5),
            "rss_scraped_mib": rss_kib(pid) / 1024}


async def creates_while_scraped(peer: RuntimePeer, pods, port: int, creates: int, seconds: float,
                                clients: int = 1) -> tuple[list[float], list[float], int]:
    """create_probes while `clients` clients scrape /metrics as Prometheus does, each one
    scrape right after the other: each probe meets a render holding the GIL in a worker
    thread (the worst case; a real Prometheus scrapes every 15-30 s; several clients: a
    scrape storm). Returns the probes and the scrapes answered."""
    url = "http://127.0.0.1:%d/metrics" % port
    done = asyncio.Event()
    scraped = 0

    async def scrape_until_done() -> None:
        nonlocal scraped
        while not done.is_set():
            await asyncio.to_thread(http_get, url, 30.0, PROMETHEUS_HEADERS)
            scraped += 1

    scrapers = [asyncio.ensure_future(scrape_until_done()) for _ in range(clients)]
    try:
        full, floor = await create_probes(peer, pods, creates, seconds)
    finally:
        done.set()
        await asyncio.gather(*scrapers)
    return full, floor, scraped


async def measure(args: argparse.Namespace, n: int, tmp: Path, tree: CgroupTree, pods) -> dict:
    port = free_port()
    sock = tmp / "nri.sock"
    procs: list[subprocess.Popen] = []
    log_path = tmp / "daemon.log"
    async with RuntimePeer(sock) as peer:
        try:
            with open(log_path, "wb") as log_file:
                # own sessions: a Ctrl-C reaches the bench only, which stops them in order
                daemon = subprocess.Popen(daemon_command(tmp, port, sock, tree.link_root) + args.daemon_arg, cwd=ROOT,
                                          env=daemon_env(), stdout=log_file, stderr=subprocess.STDOUT,
                                          start_new_session=True)
            procs.append(daemon)
            procs.append(subprocess.Popen([sys.executable, "-m", "bench.daemon_scale", "--serve-empty", str(sock)],
                                          cwd=ROOT, start_new_session=True))
            await peer.wait_plugins(2, timeout=60)
            ready_s = await wait_ready(port, daemon, 60)
            load_s = await deliver(peer, pods)
            await asyncio.sleep(args.warmup)
            s0 = proc_sample(daemon.pid)
            await asyncio.sleep(args.window)
            s1 = proc_sample(daemon.pid)
            full, floor = await create_probes(peer, pods, args.creates, args.window)
            s2 = proc_sample(daemon.pid)
            scraped = await scrapes(port, daemon.pid, args.scrapes)
            if args.scraped_creates:
                before = proc_sample(daemon.pid)
                while_scraped = await creates_while_scraped(peer, pods, port, args.scraped_creates, args.window,
                                                            args.scrapers)
                after = proc_sample(daemon.pid)
            readyz, _ = await asyncio.to_thread(http_get, "http://127.0.0.1:%d/readyz" % port)
            drift = await drift_window(args, peer, pods, port, daemon.pid, procs[1].pid) if args.drift else None
        finally:
            codes = [stop_process(p) for p in reversed(procs)]
    result = {"pods": n, "containers": n * len(CONTAINERS), "ready_after_nri_s": ready_s, "load_s": load_s,
              "window_s": args.window, "daemon_args": args.daemon_arg, **window_figures(s0, s1, s2), **scraped, "readyz": readyz,
              "create": latency(full), "floor": latency(floor), **ratios(latency(full), latency(floor)),
              "daemon_exit": codes[-1], "daemon_log_lines": log_path.read_bytes().count(b"\n")}
    if args.scraped_creates:
        full, floor, count = while_scraped
        result["while_scraped"] = {"scrapers": args.scrapers, "scrapes": count, "create": latency(full),
                                   "floor": latency(floor), "cpu_pct": cpu_percent(before, after),
                                   "rss_before_mib": before.rss_kib / 1024, "rss_after_mib": after.rss_kib / 1024,
                                   "hwm_before_mib": before.hwm_kib / 1024, "hwm_after_mib": after.hwm_kib / 1024}
    if drift is not None:
        result["drift"] = drift_figures(*drift)
    return result


async def drift_window(args: argparse.Namespace, peer: RuntimePeer, pods, port: int, pid: int,
                       floor_pid: int) -> tuple[list[ProcSample], list[int]]:
    """--drift seconds in chunks of --window: probe containers come and go, /metrics is
    scraped once a chunk; the daemon's sample at the start and after each chunk, and the
    empty plugin's VmRSS KiB beside each (the floor: a Python process on the same stub that
    hears the same probes)."""
    samples, floor = [proc_sample(pid)], [rss_kib(floor_pid)]
    url = "http://127.0.0.1:%d/metrics" % port
    for _ in range(max(1, round(args.drift / args.window))):
        await create_probes(peer, pods, args.drift_creates, args.window)
        await asyncio.to_thread(http_get, url, 10.0, PROMETHEUS_HEADERS)
        samples.append(proc_sample(pid))
        floor.append(rss_kib(floor_pid))
    return samples, floor


def drift_figures(samples: list[ProcSample], floor_kib: list[int]) -> dict[str, Any]:
    """RSS over the drift window: start, end, highest (MiB), the least-squares slope in
    MiB per 10 minutes, the window's CPU %, every sample's RSS (MiB); the floor's (the
    empty plugin's RSS at the same moments) start, end and slope."""
    start, end = samples[0], samples[-1]
    minutes = [(s.at - start.at) / 60 for s in samples]
    return {"rss_start_mib": start.rss_kib / 1024, "rss_end_mib": end.rss_kib / 1024,
            "rss_max_mib": max(s.rss_kib for s in samples) / 1024,
            "rss_slope_mib_per_10min": _slope_per_10min(minutes, [s.rss_kib for s in samples]),
            "minutes": minutes[-1], "cpu_pct": cpu_percent(start, end),
            "rss_mib": [round(s.rss_kib / 1024, 1) for s in samples],
            "floor_rss_start_mib": floor_kib[0] / 1024, "floor_rss_end_mib": floor_kib[-1] / 1024,
            "floor_rss_slope_mib_per_10min": _slope_per_10min(minutes, floor_kib)}


def _slope_per_10min(minutes: list[float], rss_kib: list[int]) -> float:
    """The least-squares slope of RSS (KiB) over time (minutes), in MiB per 10 minutes."""
    slope, _ = statistics.linear_regression(minutes, [kib / 1024 for kib in rss_kib])
    return slope * 10


def run_one(args: argparse.Namespace, n: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="koordlet-scale-") as name:
        tmp = Path(name)
        tree = CgroupTree(tmp / "cgroup")
        pods = workload(n, cpu=0)
        try:
            tree.create(cgroup_dirs(pods))
            runner = asyncio.Runner(loop_factory=loop_factory(uvloop_available()))
            try:
                result = runner.run(measure(args, n, tmp, tree, pods))
            finally:
                runner.close()
            if args.keep_log:
                Path("%s-%d.log" % (args.keep_log, n)).write_bytes((tmp / "daemon.log").read_bytes())
        finally:
            for problem in tree.remove():
                print("cleanup: " + problem, file=sys.stderr)
    return result


class EmptyPlugin:
    def create_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        return None


def serve_empty(path: str) -> None:
    stub = Stub(EmptyPlugin(), name=EMPTY_PLUGIN, index="99", config=StubConfig(socket_path=path), environ={})
    asyncio.Runner(loop_factory=loop_factory(uvloop_available())).run(stub.run())


def raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (`argv`, or sys.argv's); `parse_args([])` gives every option's
    default, for the benches that run `run_one` with a few of them changed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", default="100,1000,3000", help="comma-separated pod counts")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds after the pods are delivered")
    parser.add_argument("--window", type=float, default=30.0, help="seconds of the quiet and of the create window")
    parser.add_argument("--creates", type=_at_least_one, default=200,
                        help="CreateContainer probes in the create window (1 or more)")
    parser.add_argument("--scrapes", type=_at_least_one, default=5, help="/metrics GETs after the windows (1 or more)")
    parser.add_argument("--scraped-creates", type=int, default=0,
                        help="then this many CreateContainer probes over another --window while /metrics is "
                             "scraped back to back as Prometheus asks (JSON key while_scraped; 0: skipped)")
    parser.add_argument("--scrapers", type=_at_least_one, default=1,
                        help="clients scraping back to back at once during --scraped-creates (several: a scrape storm)")
    parser.add_argument("--drift", type=float, default=0.0,
                        help="seconds of a last window for RSS drift (JSON key drift; 0: skipped), e.g. 600")
    parser.add_argument("--drift-creates", type=_at_least_one, default=20,
                        help="probe containers created and removed in each --window of the drift window")
    parser.add_argument("--daemon-arg", action="append", default=[],
                        help="one more flag for the daemon, repeatable (e.g. --daemon-arg=--collect-res-used-interval-seconds=2)")
    parser.add_argument("--keep-log", default="", help="copy the daemon's log of each N to <this>-<N>.log")
    parser.add_argument("--serve-empty", default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _at_least_one(text: str) -> int:
    """A count the figures are made of: 0 would leave the table nothing to print."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("%r: give 1 or more" % text)
    return value


def main() -> None:
    args = parse_args()
    configure_logging("warning", "json")  # the peer's and the stub's info lines stay out of the figures
    if args.serve_empty:
        serve_empty(args.serve_empty)
        return
    if os.geteuid() != 0:
        sys.exit("daemon_scale: needs root (real cgroups)")
    for signum in (signal.SIGINT, signal.SIGTERM):  # also when started with SIGINT ignored (`cmd &`)
        signal.signal(signum, raise_interrupt)
    print("daemon_scale: real koordlet process, every default agent, standalone; N pods x %d containers over NRI "
          "(nri.testing.RuntimePeer); real cgroup v1 + cgroup2 dirs under /sys/fs/cgroup/<controller>/"
          "koordlet-scale-<hex8> (daemon's --cgroup-root-dir = symlinks to them); warm-up %.0f s, quiet window "
          "%.0f s, create window %.0f s with %d CreateContainer probes; floor = empty plugin on the same stub; "
          "daemon's PYTHONOPTIMIZE=%s" % (len(CONTAINERS), args.warmup, args.window, args.window, args.creates,
                                          daemon_env()["PYTHONOPTIMIZE"]), flush=True)
    results = []
    for n in (int(x) for x in args.pods.split(",")):
        result = run_one(args, n)
        print(json.dumps(result, sort_keys=True), flush=True)
        results.append(result)
    print("cpu% q: quiet window (sys% q: its kernel part; loop% q: the event loop thread's part); cpu% c: create window; RSS0/RSS1/RSS2: VmRSS MiB at quiet start / create end / after the scrapes; HWM: VmHWM "
          "MiB; scr: /metrics wall ms p50 and daemon CPU ms; cc: CreateContainer to koordlet us; fl: to the empty "
          "plugin (floor) us; x: ratio")
    print(table(results))
    for result in results:
        if "while_scraped" in result:
            print(while_scraped_line(result))
        if "drift" in result:
            print(drift_line(result))


def drift_line(result: dict) -> str:
    drift = result["drift"]
    return ("N=%d, drift window %.1f min (pods coming and going, /metrics scraped): RSS %.1f -> %.1f MiB, highest %.1f, "
            "slope %+.2f MiB per 10 min; CPU %.2f %%; floor (the empty plugin, same moments): %.1f -> %.1f MiB, "
            "slope %+.2f MiB per 10 min; the daemon's slope less the floor's %+.2f"
            % (result["pods"], drift["minutes"], drift["rss_start_mib"], drift["rss_end_mib"], drift["rss_max_mib"],
               drift["rss_slope_mib_per_10min"], drift["cpu_pct"], drift["floor_rss_start_mib"],
               drift["floor_rss_end_mib"], drift["floor_rss_slope_mib_per_10min"],
               drift["rss_slope_mib_per_10min"] - drift["floor_rss_slope_mib_per_10min"]))


def while_scraped_line(result: dict) -> str:
    scraped = result["while_scraped"]
    full, floor = scraped["create"], scraped["floor"]
    return ("N=%d, CreateContainer while %d client(s) scrape /metrics back to back (%d scrapes, %.1f a second): "
            "p50 / p99 / max %.0f / %.0f / %.0f us, floor %.0f / %.0f / %.0f us; x p50 %.2f, x p99 %.2f; daemon CPU "
            "%.1f %% (quiet %.1f %%); RSS %.1f -> %.1f MiB, HWM %.1f -> %.1f"
            % (result["pods"], scraped["scrapers"], scraped["scrapes"], scraped["scrapes"] / result["window_s"],
               full["p50_us"], full["p99_us"], full["max_us"], floor["p50_us"], floor["p99_us"], floor["max_us"],
               full["p50_us"] / floor["p50_us"], full["p99_us"] / floor["p99_us"], scraped["cpu_pct"],
               result["cpu_pct_quiet"], scraped["rss_before_mib"], scraped["rss_after_mib"], scraped["hwm_before_mib"],
               scraped["hwm_after_mib"]))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("daemon_scale: interrupted; daemon stopped, cgroups removed")
