"""Which Kubernetes client the reporter uses: import time and RSS of each candidate.

A DaemonSet runs one agent per node, so what a client costs at import (start-up
latency) and in resident memory (per node, forever) matters more than features.
Each candidate is imported in a fresh interpreter, the way the daemon would use
it for the NodeMetric status and KCNR annotations; the floor is `python -c pass`
in the same run, and a reference row is the stdlib + h11 path (what an
asyncio client of our own would import).

    python -m bench.k8s_client_choice [--python PATH] [--runs N]

PATH defaults to .scratch-venv/bin/python when it exists (a venv holding all
four candidates: `python3 -m venv .scratch-venv && .scratch-venv/bin/pip install
kubernetes kubernetes-asyncio lightkube kr8s h11`), else this interpreter;
candidates missing from PATH's environment are reported as such.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

# What a child prints: wall time of the imports, and VmRSS after them.
_CHILD = """
import time, json
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
rss = 0
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
print(json.dumps({{"import_s": t1 - t0, "rss_kib": rss}}))
"""

# name -> (imports as the reporter would write them, asyncio fit, status subresource)
CANDIDATES: dict[str, tuple[str, str, str]] = {
    "floor: python -c pass": ("pass", "-", "-"),
    "kubernetes (official)": (
        "from kubernetes import client, config",
        "sync only (urllib3): every call needs a thread",
        "CustomObjectsApi.replace_cluster_custom_object_status",
    ),
    "kubernetes-asyncio": (
        "from kubernetes_asyncio import client, config",
        "native (aiohttp)",
        "CustomObjectsApi.replace_cluster_custom_object_status",
    ),
    "lightkube": (
        "from lightkube import AsyncClient, KubeConfig\n"
        "from lightkube.generic_resource import create_global_resource",
        "native (httpx AsyncClient)",
        "generic resource .Status + AsyncClient.replace(obj, name)",
    ),
    "kr8s": (
        "import kr8s.asyncio\nfrom kr8s.asyncio.objects import new_class",
        "native (httpx), sync wrapper generated",
        "patch(..., subresource='status') only: no PUT of status",
    ),
    "reference: asyncio+ssl+h11": (
        "import asyncio, ssl, json, h11",
        "native",
        "whatever we write",
    ),
}


def measure(python: str, imports: str, runs: int) -> dict[str, float] | str:
    rows = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run([python, "-c", _CHILD.format(imports=imports)],
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
            return last
        row = json.loads(proc.stdout)
        row["wall_s"] = wall
        rows.append(row)
    return {key: statistics.median(row[key] for row in rows) for key in ("import_s", "rss_kib", "wall_s")}


# What the chosen client adds to the daemon itself (run with the project's interpreter).
DAEMON_ROWS: dict[str, str] = {
    "daemon: import koordlet.daemon.wiring": "import koordlet.daemon.wiring",
    "daemon + lightkube sink": "import koordlet.daemon.wiring\nimport koordlet.reporter.kube_sink, lightkube\n"
                               "from lightkube import AsyncClient, KubeConfig\n"
                               "from lightkube.generic_resource import create_global_resource",
}


def default_python() -> str:
    scratch = Path(__file__).resolve().parent.parent / ".scratch-venv" / "bin" / "python"
    return str(scratch) if scratch.exists() else sys.executable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=default_python())
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"interpreter: {args.python}  runs per candidate: {args.runs} (medians)")
    results = {name: measure(args.python, spec[0], args.runs) for name, spec in CANDIDATES.items()}
    floor = results["floor: python -c pass"]
    assert isinstance(floor, dict), floor
    header = f"{'candidate':30} {'import ms':>10} {'process ms':>11} {'x floor':>8} {'RSS MiB':>8} {'+MiB':>6}"
    print(header)
    print("-" * len(header))
    for name, result in results.items():
        if isinstance(result, str):
            print(f"{name:30} not installed: {result}")
            continue
        ratio = result["wall_s"] / floor["wall_s"]
        extra = (result["rss_kib"] - floor["rss_kib"]) / 1024
        print(f"{name:30} {result['import_s'] * 1e3:10.1f} {result['wall_s'] * 1e3:11.1f} {ratio:8.1f}"
              f" {result['rss_kib'] / 1024:8.1f} {extra:6.1f}")
    daemon = {name: measure(sys.executable, imports, args.runs) for name, imports in DAEMON_ROWS.items()}
    if all(isinstance(r, dict) for r in daemon.values()):
        base, full = daemon.values()
        assert isinstance(base, dict) and isinstance(full, dict)
        print()
        print(f"in the daemon ({sys.executable}): koordlet.daemon.wiring {base['import_s'] * 1e3:.0f} ms "
              f"{base['rss_kib'] / 1024:.1f} MiB; + lightkube sink {full['import_s'] * 1e3:.0f} ms "
              f"{full['rss_kib'] / 1024:.1f} MiB (adds {(full['import_s'] - base['import_s']) * 1e3:.0f} ms, "
              f"{(full['rss_kib'] - base['rss_kib']) / 1024:.1f} MiB)")
    print()
    print(f"{'candidate':30} asyncio fit / status subresource")
    for name, (_, fit, status) in CANDIDATES.items():
        if not name.startswith("floor"):
            print(f"{name:30} {fit} / {status}")


if __name__ == "__main__":
    main()
