"""Every default of the daemon, in one place.

Flag names follow koordlet's where koordlet has the same knob; the values are
the ones koordlet and Katalyst ship unless a comment says why not.
"""

from pathlib import Path

# HTTP endpoint for /metrics, /healthz, /readyz (koordlet and katalyst-agent both use :9316).
ADDR = ":9316"

CGROUP_ROOT_DIR = Path("/sys/fs/cgroup/")
PROC_ROOT_DIR = Path("/proc/")
SYS_ROOT_DIR = Path("/sys/")

# containerd's NRI socket (NRI's default in containerd 1.7 and 2.x).
NRI_SOCKET = Path("/var/run/nri/nri.sock")

# Checkpoints and other state that must survive a restart of the daemon.
STATE_DIR = Path("/var/lib/koordlet")

LOG_LEVEL = "info"
# "auto": JSON lines when stderr is not a terminal or when running in a pod,
# human-readable console lines on a terminal.
LOG_FORMAT = "auto"

# How long SIGTERM may take before the daemon gives up waiting for modules.
SHUTDOWN_GRACE_SECONDS = 1.5

# HTTP server limits: an idle keep-alive connection is closed after this long.
HTTP_IDLE_TIMEOUT_SECONDS = 30.0
# Responses larger than this are gzip-compressed when the client accepts it.
HTTP_GZIP_MIN_BYTES = 4096
# Level 1 costs ~1/9 of level 9's CPU on a 10k-series payload (reference/machine.md).
HTTP_GZIP_LEVEL = 1

# Longest a module's start() may take; past it the daemon exits 1 with a clear error
# (a module that waits for a peer does so after start, and /readyz says it is not ready).
MODULE_START_TIMEOUT_SECONDS = 60.0
