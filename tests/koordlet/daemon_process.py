"""Start the real daemon as a child process for endpoint and signal tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class DaemonProcess:
    proc: subprocess.Popen
    port: int
    _stderr: str | None = field(default=None, repr=False)

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, response.read(), _lower(response.headers)
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, exc.read(), _lower(exc.headers)

    def terminate(self, timeout: float = 60.0) -> tuple[int, float]:
        """SIGTERM, then the exit code and how long it took; `timeout` is a deadline for a busy
        machine, not a budget. A daemon still running then is killed, so its stderr can be read."""
        start = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self._reap(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"no exit {timeout} s after SIGTERM: {self.stderr()[-3000:]}") from None
        return self.proc.returncode, time.monotonic() - start

    def stop(self) -> None:
        """Kill the daemon if it still runs, reap it and close its pipes (its stderr is kept)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self._reap()

    def stderr(self) -> str:
        """All the daemon wrote to stderr: waits for it to exit, as reading to the end of the pipe did."""
        return self._reap()

    def _reap(self, timeout: float | None = None) -> str:
        # communicate drains both pipes while it waits (a daemon blocked on a full pipe would
        # never exit) and closes them; its output is kept, as the pipes cannot be read twice
        if self._stderr is None:
            _, err = self.proc.communicate(timeout=timeout)
            self._stderr = err.decode() if err else ""
        return self._stderr


# Where a test daemon looks for its runtime unless the test names one: a directory with no
# socket in it. The defaults are the host's containerd (NRI socket and CRI endpoint): on a
# node that runs one, a test daemon would register as its NRI plugin and shape its pods.
NO_RUNTIME_DIR = Path(tempfile.gettempdir()) / "koordlet-tests-no-runtime"


def no_runtime_nri_socket() -> Path:
    """An NRI socket path in a directory that exists and holds no socket."""
    NO_RUNTIME_DIR.mkdir(exist_ok=True)
    return NO_RUNTIME_DIR / "nri.sock"


def isolated(args: list[str]) -> list[str]:
    """`args` plus an NRI socket and a CRI endpoint that lead nowhere, for those not given."""
    out = list(args)
    if "--help" in out:
        return out
    if "--runtime-hooks-nri-socket-path" not in out and "--nri-socket" not in out:
        out += ["--runtime-hooks-nri-socket-path", str(no_runtime_nri_socket())]
    if "--cri-endpoint" not in out:
        out += ["--cri-endpoint", ""]
    return out


def child_env(**extra: str) -> dict[str, str]:
    """This environment for a child running the project's code, standalone (no cluster), with `extra`."""
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), **extra)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return env


def command(args: list[str]) -> list[str]:
    """The command line that runs the daemon with `args`, isolated from the host's runtime."""
    return [sys.executable, "-m", "koordlet", *isolated(args)]


def spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(command(args), cwd=PROJECT_ROOT,
                            env=child_env() if env is None else env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def start_daemon(state_dir: Path, extra: list[str] = (), wait: float = 10.0,
                 env: dict[str, str] | None = None) -> DaemonProcess:
    port = free_port()
    proc = spawn(["--addr", f"127.0.0.1:{port}", "--state-dir", str(state_dir), "--log-format", "json", *extra], env)
    daemon = DaemonProcess(proc, port)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited early with {proc.returncode}: {daemon.stderr()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return daemon
        except OSError:
            time.sleep(0.05)
    daemon.stop()
    raise RuntimeError(f"daemon did not listen in time: {daemon.stderr()[-3000:]}")


def _lower(headers) -> dict[str, str]:
    return {key.lower(): value for key, value in headers.items()}
