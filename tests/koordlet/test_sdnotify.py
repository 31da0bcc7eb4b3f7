"""sd_notify sends one datagram to $NOTIFY_SOCKET, and is silent without it."""

import socket

from koordlet.daemon.sdnotify import notify


def test_notify_sends_ready_to_the_socket(tmp_path):
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
        receiver.bind(str(path))
        assert notify("READY=1", {"NOTIFY_SOCKET": str(path)})
        assert receiver.recv(64) == b"READY=1"


def test_notify_without_socket_is_a_no_op():
    assert notify("READY=1", {}) is False


def test_notify_to_a_missing_socket_reports_failure(tmp_path):
    assert notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "absent")}) is False


def test_a_failed_ready_is_logged_not_swallowed(tmp_path):
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        assert notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "absent")}) is False
    (line,) = [e for e in logs if e["event"] == "sd_notify_failed"]
    assert line["state"] == "READY=1" and line["log_level"] == "warning"


def test_nobody_to_tell_is_not_a_failure():
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        notify("READY=1", {})
    assert logs == []
