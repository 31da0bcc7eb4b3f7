"""What a default daemon imports at start: modules for features that are off stay unloaded."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

from koordlet.daemon.cli import parse_args
from koordlet.qosmanager.agent import STRATEGIES, strategies_for
from tests.koordlet.daemon_process import PROJECT_ROOT, child_env, command, free_port

# the daemon's entry modules and its default agents' build, as koordlet.__main__ runs them
# (the agents are only selected here: building them needs a host)
DEFAULT_START = """
import sys
import koordlet.__main__, koordlet.daemon.wiring
from koordlet.agents import AGENTS
from koordlet.daemon.cli import parse_args
from koordlet.qosmanager.agent import strategies_for
config = parse_args([])
enabled = [spec.name for spec in AGENTS if spec.enabled(config)]
strategies_for(config)
print(" ".join(sorted(sys.modules)))
"""


def test_default_start_leaves_off_features_unimported():
    loaded = set(subprocess.run([sys.executable, "-c", DEFAULT_START], check=True, capture_output=True,
                                text=True).stdout.split())
    assert "koordlet.qosmanager.cpu_suppress" in loaded  # on by default: the check below can see a module
    for off in ("koordlet.qosmanager.cpu_evict", "koordlet.qosmanager.memory_evict", "koordlet.qosmanager.victims",
                "koordlet.qosmanager.api_evictor", "koordlet.orm.module"):
        assert off not in loaded, off
    # grpc (~10 MiB) comes with the CRI client, made only when the informer starts with an endpoint
    assert "koordlet.statesinformer.module" in loaded
    assert "grpc" not in loaded and "koordlet.statesinformer.cri_client" not in loaded


def test_each_strategy_is_built_for_its_own_gate():
    all_on = parse_args(["--feature-gates=" + ",".join(gate + "=true" for gate, _ in STRATEGIES)])
    assert [strategy.gate for strategy in strategies_for(all_on)] == [gate for gate, _ in STRATEGIES]


# the daemon built standalone (not started) on a host without a cgroup hierarchy, as
# bench.daemon_startup runs it: the QoS manager is idle there
IDLE_BUILD = """
import sys
from koordlet.daemon.cli import parse_args
from koordlet.daemon.wiring import build_daemon
root = sys.argv[1]
build_daemon(parse_args(["--addr", "127.0.0.1:0", "--cgroup-root-dir", root + "/cgroups", "--state-dir", root + "/state",
                         "--cri-endpoint", "", "--kubelet-root-dir", root + "/kubelet",
                         "--runtime-hooks-nri-socket-path", root + "/nri.sock"]))
print(" ".join(sorted(sys.modules)))
"""

# imported only when their mode is on: Kubernetes mode, the CPICollector gate, a cgroup hierarchy
LAZY = ("koordlet.slo.cluster_watch", "koordlet.statesinformer.node_watch", "koordlet.metricsadvisor.collectors.cpi",
        "system.perf_events", "koordlet.qosmanager.assembly", "koordlet.qosmanager.framework",
        "koordlet.qosmanager.eviction", "koordlet.qosmanager.cpu_suppress")


def test_standalone_build_without_cgroups_leaves_other_modes_unimported(tmp_path):
    (tmp_path / "cgroups").mkdir()
    loaded = set(subprocess.run([sys.executable, "-c", IDLE_BUILD, str(tmp_path)], check=True, capture_output=True,
                                text=True).stdout.split())
    assert "koordlet.qosmanager.agent" in loaded and "koordlet.metricsadvisor.collectors.psi" in loaded
    assert sorted(loaded.intersection(LAZY)) == []


# modules a serving daemon has no use for, each a few hundred KiB to MiB of RSS
UNUSED = (
    # prometheus_client's package imports its HTTP servers and clients (~2.8 MiB): the daemon
    # serves /metrics itself and imports only the package's metric types
    "prometheus_client.exposition", "http.server", "wsgiref", "urllib.request", "email",
    # OpenSSL's digests (~0.9 MiB), which secrets imports (util.durable wanted a random name)
    "hashlib",
    # shutil and its compressors (~0.5 MiB), which argparse imports for the terminal's width
    "shutil", "bz2", "lzma",
    # decimal (~0.4 MiB), which quantities were once parsed with
    "decimal",
)


def test_serving_metrics_leaves_unused_modules_unimported(tmp_path):
    port = free_port()
    env = child_env(PYTHONPROFILEIMPORTTIME="1")  # each import on stderr (a file: the listing is long)
    daemon = command(["--addr", "127.0.0.1:%d" % port, "--state-dir", str(tmp_path / "state")])
    with open(tmp_path / "stderr", "wb") as stderr:
        proc = subprocess.Popen(daemon, cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            bodies = [scrape(proc, port, accept) for accept in ("text/plain", "application/openmetrics-text")]
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    assert b"# TYPE koordlet_build_info gauge" in bodies[0] and bodies[1].endswith(b"# EOF\n")
    imported = {line.rsplit("|", 1)[-1].strip() for line in (tmp_path / "stderr").read_text().splitlines()
                if line.startswith("import time:")}
    assert "prometheus_client.metrics" in imported  # the check below can see the package's modules
    assert sorted(imported.intersection(UNUSED)) == []


def scrape(proc: subprocess.Popen, port: int, accept: str) -> bytes:
    """/metrics once the daemon serves it (polled to a deadline)."""
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, "the daemon exited"
        request = urllib.request.Request("http://127.0.0.1:%d/metrics" % port, headers={"Accept": accept})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.read()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
