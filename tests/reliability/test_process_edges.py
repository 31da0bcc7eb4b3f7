"""The daemon as a process at its edges: a file-descriptor limit too low, bad flags and
files, a port in use, a second daemon on the same state dir, SIGHUP, and SIGTERM with
clients connected. Each ends in one clear line (exit 2) or carries on, never a traceback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest

from tests.koordlet.daemon_process import PROJECT_ROOT, child_env, isolated

pytestmark = pytest.mark.slow


# Sets the open-files limit and execs the daemon: done in the child by a preexec_fn, the fork
# ran grpc's fork handlers in a copy of this test process (which has grpc loaded), whose
# poller could meet its epoll fd closed by close_fds before the exec and abort the child.
WITH_NOFILE = ("import os, resource, sys; limit = int(sys.argv[1]); "
               "resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)); "
               "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])")


def koordlet(*args: str, nofile: int | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    launcher = [] if nofile is None else ["-c", WITH_NOFILE, str(nofile)]
    return subprocess.run([sys.executable, *launcher, "-m", "koordlet", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=PROJECT_ROOT, env=child_env())


def base(tmp_path, *extra: str) -> list[str]:
    return isolated(["--addr", "127.0.0.1:0", "--state-dir", str(tmp_path / "state"), "--cgroup-root-dir",
                     str(tmp_path / "none"), "--log-format", "json", *extra])


def one_line_exit_2(result: subprocess.CompletedProcess, needle: str) -> None:
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and needle in result.stderr


def test_too_few_file_descriptors_is_one_line_and_exit_2(tmp_path):
    one_line_exit_2(koordlet(*base(tmp_path), nofile=20), "RLIMIT_NOFILE is 20")


@pytest.mark.parametrize("args, needle", [
    (["--kubelet-pods-url", "ht!tp://x"], "kubelet-pods-url"),
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["--report-interval-seconds", "1"], "at least 30"),
])
def test_bad_flags_are_one_line_and_exit_2(tmp_path, args, needle):
    result = koordlet(*base(tmp_path, *args))
    one_line_exit_2(result, needle)
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_config_file_of_random_bytes_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_bytes(os.urandom(4096))
    one_line_exit_2(koordlet(*base(tmp_path, "--config", str(path))), "cannot read config file")


def test_a_port_in_use_is_found_before_any_module_starts(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        args = base(tmp_path)
        args[1] = "127.0.0.1:%d" % port
        result = koordlet(*args)
    finally:
        taken.close()
    one_line_exit_2(result, "address already in use")
    assert "module_started" not in result.stderr


@contextmanager
def running(tmp_path, *extra: str) -> Iterator[subprocess.Popen]:
    """The daemon with its output piped; on the way out killed if it still runs, reaped, its
    pipes closed."""
    with subprocess.Popen([sys.executable, "-m", "koordlet", *base(tmp_path, *extra)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT,
                          env=child_env()) as proc:
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()


def wait_for_line(proc: subprocess.Popen, event: str, deadline_s: float = 60) -> dict:
    deadline = time.monotonic() + deadline_s
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        try:
            record = json.loads(line)
        except ValueError:
            raise AssertionError("a line that is not JSON: %r" % line) from None
        if record.get("event") == event:
            return record
    raise AssertionError("no %s line" % event)


def test_a_second_daemon_on_the_same_state_dir_exits_2(tmp_path):
    with running(tmp_path) as first:
        wait_for_line(first, "daemon_started")
        one_line_exit_2(koordlet(*base(tmp_path)), "another koordlet")
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=30)


def test_sighup_is_logged_and_the_daemon_carries_on_then_sigterm_with_clients_is_quiet(tmp_path):
    with running(tmp_path) as proc, ExitStack() as clients:
        started = wait_for_line(proc, "http_listening")
        wait_for_line(proc, "daemon_started")
        proc.send_signal(signal.SIGHUP)
        wait_for_line(proc, "hangup_signal_received")
        assert proc.poll() is None
        host, port = started["addr"][0]
        for _ in range(50):
            client = clients.enter_context(socket.create_connection((host, port)))
            client.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")  # keep-alive, held open
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "Traceback" not in rest and "CancelledError" not in rest
        for line in rest.splitlines():
            json.loads(line)  # every line, the stdlib's too, is one structured event


# The daemon with one change: it sends itself SIGTERM as the last step of being built, the
# moment a test's SIGTERM lands once the port (bound during the build) accepts connections.
_SIGNAL_DURING_BUILD = """
import os, signal, sys
from koordlet.__main__ import main
from koordlet.daemon import wiring
built = wiring.build_daemon
def build_then_signal(*args, **kwargs):
    daemon = built(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGTERM)
    return daemon
wiring.build_daemon = build_then_signal
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_that_arrives_while_the_daemon_is_built_stops_it(tmp_path):
    result = subprocess.run([sys.executable, "-c", _SIGNAL_DURING_BUILD, *base(tmp_path)], capture_output=True,
                            text=True, timeout=60, cwd=PROJECT_ROOT,
                            env=child_env())
    assert result.returncode == 0, result.stderr[-2000:]
    events = [json.loads(line)["event"] for line in result.stderr.splitlines()]
    assert "stop_signal_received" in events and "koordlet_exiting" in events
