"""Start the real daemon, wait until /readyz answers 200, then measure it idle.

Prints: start-to-ready time, RSS after settling, CPU time used while idle.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IDLE_SECONDS = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_ready(port: int, proc: subprocess.Popen, limit: float = 20.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
                if response.status == 200:
                    return time.monotonic() - start
        except OSError:
            time.sleep(0.01)
    raise RuntimeError("daemon not ready in time")


def main() -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as state:
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "koordlet", "--addr", f"127.0.0.1:{port}",
                                 "--state-dir", state, "--log-level", "warning"], cwd=ROOT,
                                env=dict(os.environ, PYTHONPATH=str(ROOT)))
        try:
            ready_after = wait_ready(port, proc)
            time.sleep(1.0)
            cpu_before = cpu_seconds(proc.pid)
            time.sleep(IDLE_SECONDS)
            idle_cpu = cpu_seconds(proc.pid) - cpu_before
            rss = rss_kib(proc.pid)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                scrape_bytes = len(response.read())
        finally:
            proc.send_signal(signal.SIGTERM)
            stop_started = time.monotonic()
            code = proc.wait(timeout=10)
            stop_took = time.monotonic() - stop_started
    print(f"daemon_idle: process start -> /readyz 200: {ready_after * 1000:.0f} ms "
          f"(wall since spawn {(time.monotonic() - started):.1f} s incl. idle window)")
    print(f"daemon_idle: RSS after settling: {rss / 1024:.1f} MiB")
    print(f"daemon_idle: CPU while idle: {idle_cpu * 1000:.0f} ms over {IDLE_SECONDS:.0f} s "
          f"({idle_cpu / IDLE_SECONDS * 100:.2f} % of one core)")
    print(f"daemon_idle: /metrics payload: {scrape_bytes} bytes")
    print(f"daemon_idle: SIGTERM -> exit {code} in {stop_took * 1000:.0f} ms")


if __name__ == "__main__":
    main()
