"""A node for the dashboard: the daemon in standalone mode with two pods it learns over CRI
(a fake runtime serving real cgroup v1 + cgroup2 dirs, a spinning best-effort process and an
idle latency-sensitive one), scraped every second by Debian's Prometheus on loopback.

The dashboard test and `make dashboard` (the PNG for reviewers) both run it.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from koordlet.apis.keys import KOORD_QOS_CLASS
from system.host import Host
from tests.koordlet.daemon_process import DaemonProcess, free_port, start_daemon
from tests.koordlet.statesinformer.cri_server import FakeContainer, FakeRuntime, FakeSandbox, serve
from tests.system.cgroup_sandbox import cgroup_sandbox, make_child

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "koordlet.json"
CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory")
PODS = (  # uid, name, QoS class, kube QoS dir, command in its one container
    ("be1", "batch-job", "BE", "besteffort", "while True: pass"),
    ("ls1", "web", "LS", "burstable", "import time\nwhile True: time.sleep(0.05)"),
)
# Grafana's variables, as a run over one Prometheus fills them
VARIABLES = {"$__rate_interval": "20s", "$instance": ".*", "$job": ".*"}


def panel_targets(dashboard: dict) -> list[tuple[str, str]]:
    """(panel title, PromQL) for every target of every panel, variables filled."""
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", ()):
            expr = target["expr"]
            for name, value in VARIABLES.items():
                expr = expr.replace(name, value)
            out.append((panel["title"], expr))
    return out


def metric_names(expr: str) -> set[str]:
    """The metric names a query reads (ours all start koordlet_ or process_)."""
    return set(re.findall(r"\b(?:koordlet|process)_[a-z0-9_]+", expr))


@dataclass
class Prometheus:
    proc: subprocess.Popen
    port: int

    def api(self, path: str, **params: str) -> dict:
        url = "http://127.0.0.1:%d/api/v1/%s?%s" % (self.port, path, urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:  # a bad query answers 400 with the error in JSON
            with exc:
                return json.load(exc)

    def scalar(self, query: str) -> float:
        result = self.api("query", query=query).get("data", {}).get("result", [])
        return float(result[0]["value"][1]) if result else 0.0


@dataclass
class DashboardRun:
    daemon: DaemonProcess
    prometheus: Prometheus
    started: float


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


@contextmanager
def pods_in_cgroups(host: Host) -> Iterator[FakeRuntime]:
    """Real cgroups for PODS (v1 and cgroup2, for PSI), a process in each container, and a
    CRI runtime model that lists them."""
    runtime = FakeRuntime()
    with ExitStack() as stack:
        name = stack.enter_context(cgroup_sandbox(CONTROLLERS, unified=True, host=host, prefix="koordlet-dash"))
        roots = [host.cgroup(c) for c in (*CONTROLLERS, "unified")]
        for relative in ("kubepods", "kubepods/besteffort", "kubepods/burstable"):
            make_child(host, f"{name}/{relative}", roots)
        for uid, pod_name, qos, tier, command in PODS:
            parent = f"/{name}/kubepods/{tier}/pod{uid}"
            container = f"{parent}/c{uid}"
            make_child(host, parent.lstrip("/"), roots)
            make_child(host, container.lstrip("/"), roots)
            proc = subprocess.Popen([sys.executable, "-c", command])
            stack.callback(_stop, proc)
            for root in roots:
                (root / container.lstrip("/") / "cgroup.procs").write_text(str(proc.pid))
            runtime.sandboxes["s" + uid] = FakeSandbox("s" + uid, uid, pod_name, parent, labels={KOORD_QOS_CLASS: qos})
            runtime.containers["c" + uid] = FakeContainer("c" + uid, "s" + uid, "main", container, pid=proc.pid)
        yield runtime


def _stop(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait()


@contextmanager
def serving(runtime: FakeRuntime, socket: Path) -> Iterator[None]:
    """The CRI runtime on its own event loop in a thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(serve(runtime, socket), loop).result(10)
    try:
        yield
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(None), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@contextmanager
def prometheus_scraping(target_port: int, workdir: Path) -> Iterator[Prometheus]:
    config = workdir / "prometheus.yml"
    config.write_text(json.dumps({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "koordlet", "scrape_timeout": "1s",
                            "static_configs": [{"targets": ["127.0.0.1:%d" % target_port]}]}],
    }))
    port = free_port()
    with (workdir / "prometheus.log").open("wb") as log:  # the child writes to its own copy
        proc = subprocess.Popen([prometheus_binary() or "prometheus", "--config.file", str(config),
                                 "--storage.tsdb.path", str(workdir / "tsdb"),
                                 "--web.listen-address", "127.0.0.1:%d" % port],
                                stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for(lambda: _ready(port, proc), 60, "Prometheus to be ready")
        yield Prometheus(proc, port)
    finally:
        proc.terminate()
        proc.wait(30)


def _ready(port: int, proc: subprocess.Popen) -> bool:
    if proc.poll() is not None:
        raise RuntimeError("prometheus exited with %s" % proc.returncode)
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % port, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("waited %.0f s for %s" % (timeout, what))
        time.sleep(0.2)


@contextmanager
def dashboard_run(workdir: Path, host: Host | None = None) -> Iterator[DashboardRun]:
    """Everything up, and Prometheus holding scrapes of the daemon with both pods in them."""
    host = host or Host()
    slo = workdir / "nodeslo.yaml"
    slo.write_text(json.dumps({"resourceUsedThresholdWithBE": {
        "enable": True, "cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cfsQuota"}}))
    with ExitStack() as stack:
        runtime = stack.enter_context(pods_in_cgroups(host))
        socket = workdir / "cri.sock"
        stack.enter_context(serving(runtime, socket))
        daemon = start_daemon(workdir / "state", [
            "--cri-endpoint", "unix://%s" % socket, "--states-cri-sync-interval", "1s",
            "--node-slo-config", str(slo), "--log-level", "warning"])
        stack.callback(daemon.terminate)
        prometheus = stack.enter_context(prometheus_scraping(daemon.port, workdir))
        started = time.time()
        wait_for(lambda: prometheus.scalar('count(koordlet_pod_used_cpu_cores{pod_name=~"batch-job|web"})') == 2,
                 90, "Prometheus to hold both pods' CPU usage")
        yield DashboardRun(daemon, prometheus, started)
