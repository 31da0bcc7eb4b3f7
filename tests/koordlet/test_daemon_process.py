"""The real daemon process: endpoints, exit codes, signal handling."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest

from tests.koordlet.daemon_process import (
    NO_RUNTIME_DIR,
    PROJECT_ROOT,
    child_env,
    command,
    free_port,
    spawn,
    start_daemon,
)


@pytest.fixture
def daemon(tmp_path):
    proc = start_daemon(tmp_path / "state")
    yield proc
    proc.stop()


def test_metrics_serves_build_start_and_process_metrics(daemon):
    status, body, headers = daemon.get("/metrics")
    text = body.decode()
    assert status == 200
    assert headers["content-type"].startswith("text/plain; version=")
    assert 'koordlet_build_info{python_version="' in text and 'version="0.1.0"' in text
    assert "koordlet_start_time_seconds{node=" in text
    assert "process_resident_memory_bytes " in text
    # the resource executor's metrics are on the same registry
    assert "# TYPE koordlet_resource_update_total counter" in text
    assert "koordlet_resource_update_batch_duration_seconds_bucket" in text


def test_healthz_and_readyz_answer_ok_once_started(daemon):
    assert daemon.get("/healthz")[:2] == (200, b"ok\n")
    status, body, _ = daemon.get("/readyz")
    assert status == 200
    assert json.loads(body) == {"ready": True}


def test_unknown_path_is_404_and_post_is_405(daemon):
    assert daemon.get("/nope")[0] == 404
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=5) as sock:
        sock.sendall(b"POST /metrics HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 405")


def test_garbage_request_gets_400_and_the_daemon_keeps_serving(daemon):
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=5) as sock:
        sock.sendall(b"\x00\x01 not http at all\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    assert daemon.get("/healthz")[0] == 200


def test_keep_alive_serves_two_requests_on_one_connection(daemon):
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\nGET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        received = b""
        while received.count(b"ok\n") < 2:
            chunk = sock.recv(4096)
            assert chunk, "connection closed before the second answer"
            received += chunk
    assert received.count(b"HTTP/1.1 200") == 2


def test_sigterm_exits_zero_with_every_module_stopped_in_time(daemon):
    code, _ = daemon.terminate()
    assert code == 0
    err = daemon.stderr()
    assert "koordlet_exiting" in err
    assert "module_stop_timed_out" not in err  # each module's own stop deadline held


def test_taken_port_is_a_clear_error_and_exit_2(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        proc = spawn(["--addr", f"127.0.0.1:{port}", "--state-dir", str(tmp_path), "--log-format", "json"])
        _, err = proc.communicate(timeout=15)
    assert proc.returncode == 2
    assert "address already in use" in err.decode()
    assert "Traceback" not in err.decode()


def test_unwritable_state_dir_is_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    proc = spawn(["--addr", f"127.0.0.1:{free_port()}", "--state-dir", str(blocker / "state")])
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 2
    assert "cannot create state dir" in err.decode()


def test_unknown_feature_gate_exits_2_naming_the_gate(tmp_path):
    proc = spawn(["--feature-gates", "NoSuchGate=true", "--state-dir", str(tmp_path)])
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 2
    assert "NoSuchGate" in err.decode()


def test_help_documents_every_flag_and_gate():
    from koordlet.config.command_line import BUILT_IN
    from koordlet.config.features import SPECS
    from koordlet.config.option import declared
    from koordlet.daemon.cli import SECTIONS

    out = subprocess.run(command(["--help"]), capture_output=True, text=True, timeout=15,
                         env=child_env(), cwd=PROJECT_ROOT)
    assert out.returncode == 0
    flags = [item.flag for section in BUILT_IN + SECTIONS for item in declared(section)]
    assert len(flags) > 60
    for flag in flags:
        assert f"--{flag}" in out.stdout
    for name, spec in SPECS.items():
        assert f"{name}={str(spec.default).lower()}" in out.stdout


def test_systemd_is_told_ready_once_started(tmp_path, monkeypatch):
    notify_path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
        receiver.bind(str(notify_path))
        receiver.settimeout(10)
        monkeypatch.setenv("NOTIFY_SOCKET", str(notify_path))
        daemon = start_daemon(tmp_path / "state")
        try:
            assert receiver.recv(64) == b"READY=1"
            daemon.terminate()
            assert receiver.recv(64) == b"STOPPING=1"
        finally:
            daemon.stop()


def test_gc_policy_is_applied_once_every_module_started(tmp_path):
    from koordlet.config.defaults import GC_YOUNG_THRESHOLD as YOUNG_THRESHOLD

    daemon = start_daemon(tmp_path / "state")
    code, _ = daemon.terminate()
    events = [json.loads(line) for line in daemon.stderr().splitlines() if line.startswith("{")]
    names = [event["event"] for event in events]
    (applied,) = [event for event in events if event["event"] == "gc_policy_applied"]
    assert code == 0
    assert applied["frozen_objects"] > 10_000  # every module's objects, at least
    assert applied["thresholds"][0] == YOUNG_THRESHOLD
    assert names.index("daemon_started") < names.index("gc_policy_applied")


def test_a_test_daemon_looks_for_no_runtime_of_the_host(tmp_path):
    # on a node running containerd, a test daemon on the default socket would register as
    # its NRI plugin and shape its pods
    daemon = start_daemon(tmp_path / "state")
    daemon.terminate()
    events = [json.loads(line) for line in daemon.stderr().splitlines() if line.startswith("{")]
    (unavailable,) = [event for event in events if event["event"] == "nri_runtime_unavailable"]
    assert unavailable["path"] == str(NO_RUNTIME_DIR / "nri.sock")
    assert not [event for event in events if event.get("source") == "cri"]  # no CRI endpoint tried


def test_a_config_a_test_builds_names_no_runtime_of_the_host():
    # with a file at containerd's NRI socket path the informer waited for an NRI sync that
    # never came (states-informer tests timed out on a host running containerd)
    from koordlet.config import defaults
    from tests.koordlet.hubs_helper import config_of

    config = config_of()
    assert config.runtime.nri_socket_path == NO_RUNTIME_DIR / "nri.sock" != defaults.NRI_SOCKET
    assert config.runtime.cri_endpoint == ""
    named = config_of(cri_endpoint="unix:///x.sock", runtime_hooks_nri_socket_path="/y.sock")
    assert (named.runtime.cri_endpoint, str(named.runtime.nri_socket_path)) == ("unix:///x.sock", "/y.sock")
