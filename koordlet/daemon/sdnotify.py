"""systemd's sd_notify protocol: one datagram to $NOTIFY_SOCKET. A no-op when
the daemon was not started by systemd with Type=notify."""

from __future__ import annotations

import os
import socket
from typing import Mapping

import structlog

log = structlog.get_logger(__name__)


def notify(state: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Send e.g. "READY=1"; returns False when there is nobody to tell."""
    address = environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # abstract namespace
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        try:
            sock.sendto(state.encode(), address)
        except OSError as exc:  # systemd waits for READY=1 until its start timeout: say why
            log.warning("sd_notify_failed", state=state, socket=environ["NOTIFY_SOCKET"], error=str(exc))
            return False
    return True
