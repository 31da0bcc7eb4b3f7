"""The daemon's start-up: exec -> /readyz 200, against the interpreter's own start-up.

    python -m bench.daemon_startup [--runs 10]

Each run execs `koordlet` standalone with its default agents (bench.daemon_scale's
arguments: state, kubelet dir, report file, NRI and PodResources sockets in a fresh temp
dir, an empty --cgroup-root-dir, no CRI endpoint) and polls /readyz every 5 ms until it
answers 200 (and the CPU it used by then, utime+stime); the daemon is then stopped with
SIGTERM. Floors, the same number of runs, exec -> first byte on a pipe: the bare
interpreter (`python -c pass`, plus the write) and the interpreter importing grpc and
protobuf. Also printed: `import` of the daemon's entry
modules alone (what the command line and the wiring pull in), without starting anything,
and the part of that import spent making dataclasses (Python 3.11 compiles each generated
method of each class on its own: ~1.4 ms a class on this machine).
Runs alternate between the daemon and the floors so that load on the machine hits both.

Bytecode is cached as in an installed package (pip compiles it at install): the children
run without PYTHONDONTWRITEBYTECODE, so the untimed first run writes what is missing.
(A checkout run with PYTHONDONTWRITEBYTECODE set compiles koordlet's own modules at every
start: ~0.15-0.2 s more.)
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.daemon_scale import daemon_command, daemon_env, pct, stop_process

ROOT = Path(__file__).resolve().parents[1]
POLL_SECONDS = 0.005
HZ = os.sysconf("SC_CLK_TCK")
# the daemon and the floors alike at the daemon's deployed optimization level (daemon_scale.daemon_env)
CHILD_ENV = {name: value for name, value in daemon_env().items() if name != "PYTHONDONTWRITEBYTECODE"}
READY_LIMIT_SECONDS = 20.0

DAEMON = "koordlet exec -> /readyz 200"
FLOORS = {
    "python -c pass": "pass",
    "python -c 'import grpc, google.protobuf'": "import grpc, google.protobuf",
    # not a floor: what importing the daemon's entry modules alone costs
    "(imports of koordlet.__main__ + wiring)": "import koordlet.__main__, koordlet.daemon.wiring",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def readyz(port: int) -> int | None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
    try:
        conn.request("GET", "/readyz")
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def daemon_ready() -> tuple[float, float]:
    """One exec of the daemon to its first /readyz 200: (wall, CPU) seconds."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="koordlet-startup-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "cgroups").mkdir()
        command = daemon_command(tmp, port, tmp / "nri.sock", tmp / "cgroups")
        start = time.monotonic()
        proc = subprocess.Popen(command, cwd=ROOT, env=CHILD_ENV, stdin=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            while time.monotonic() - start < READY_LIMIT_SECONDS:
                if readyz(port) == 200:
                    return time.monotonic() - start, cpu_seconds(proc.pid)
                if proc.poll() is not None:
                    raise RuntimeError("daemon exited with %s" % proc.returncode)
                time.sleep(POLL_SECONDS)
            raise RuntimeError("daemon not ready after %.0f s" % READY_LIMIT_SECONDS)
        finally:
            stop_process(proc)


def first_byte(code: str) -> tuple[float, float]:
    """exec of the interpreter running `code` -> the first byte it writes after it: (wall, CPU
    used by then) seconds."""
    report = "\nimport os; t = os.times(); os.write(1, b'%f' % (t.user + t.system))"
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", code + report], cwd=ROOT, env=CHILD_ENV,
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    took = time.monotonic() - start
    cpu = float(first + proc.stdout.read())
    proc.stdout.close()
    proc.wait()
    return took, cpu


# the entry modules' import with dataclass creation timed: prints "classes seconds import_seconds"
DATACLASS_SHARE = """
import dataclasses, time
made, spent = 0, 0.0
process = dataclasses._process_class
def timed(cls, *args, **kwargs):
    global made, spent
    start = time.perf_counter()
    try:
        return process(cls, *args, **kwargs)
    finally:
        made, spent = made + 1, spent + time.perf_counter() - start
dataclasses._process_class = timed
start = time.perf_counter()
import koordlet.__main__, koordlet.daemon.wiring
print(made, spent, time.perf_counter() - start)
"""


def dataclass_share() -> tuple[int, float, float]:
    """(dataclasses made, seconds making them, seconds of the whole import) of one import of
    the entry modules."""
    out = subprocess.run([sys.executable, "-c", DATACLASS_SHARE], cwd=ROOT, env=CHILD_ENV, check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), float(out[1]), float(out[2])


def ms(seconds: float) -> str:
    return "%.0f" % (seconds * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in (DAEMON, *FLOORS)}
    shares: list[tuple[int, float, float]] = []
    daemon_ready()  # warms the page cache and writes missing bytecode; not counted
    for _ in range(args.runs):
        rows[DAEMON].append(daemon_ready())
        for name, code in FLOORS.items():
            rows[name].append(first_byte(code))
        shares.append(dataclass_share())
    print("daemon_startup: %d runs each; wall: exec -> koordlet's /readyz 200 or -> the floor's first byte; "
          "CPU: used by then" % args.runs)
    print("%-44s %7s %7s %8s %12s %12s" % ("", "p50 ms", "p90 ms", "CPU ms", "koordlet/it", "CPU ratio"))
    wall50 = pct([wall for wall, _ in rows[DAEMON]], 0.5)
    cpu50 = pct([cpu for _, cpu in rows[DAEMON]], 0.5)
    for name, samples in rows.items():
        walls, cpus = [wall for wall, _ in samples], [cpu for _, cpu in samples]
        ratios = ("", "") if name == DAEMON else ("%.1fx" % (wall50 / pct(walls, 0.5)), "%.1fx" % (cpu50 / pct(cpus, 0.5)))
        print("%-44s %7s %7s %8s %12s %12s" % (name, ms(pct(walls, 0.5)), ms(pct(walls, 0.9)), ms(pct(cpus, 0.5)), *ratios))
    print("daemon_startup: koordlet wall ms: %s" % " ".join(ms(wall) for wall, _ in rows[DAEMON]))
    spent, imported = pct([share[1] for share in shares], 0.5), pct([share[2] for share in shares], 0.5)
    print("daemon_startup: of the entry modules' import (p50 %s ms), making %d dataclasses: p50 %s ms (%.0f %%)"
          % (ms(imported), shares[0][0], ms(spent), 100 * spent / imported))


if __name__ == "__main__":
    main()
