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

# Runtime hooks (koordlet's NRI plugin identity and flags).
NRI_PLUGIN_NAME = "koordlet_nri"
NRI_PLUGIN_INDEX = "00"
# auto: NRI plus the reconcile loop; readiness waits for NRI only if its socket exists at start.
RUNTIME_HOOKS_MODE = "auto"
RUNTIME_HOOKS_RECONCILE_INTERVAL_SECONDS = 10.0

# The states informer: the CRI endpoint it lists pods from ("" turns it off; kubelet's
# --container-runtime-endpoint spelling), and how often it lists (koordlet syncs pods every 10 s).
CRI_ENDPOINT = "unix:///run/containerd/containerd.sock"
STATES_CRI_SYNC_INTERVAL_SECONDS = 10.0
STATES_KUBELET_SYNC_INTERVAL_SECONDS = 10.0
# ORM (out-of-band resource manager). Katalyst's names and values unless said otherwise.
# Off unless --topology-policy-name is given (Katalyst's "" default refuses to start).
TOPOLOGY_POLICY_NAME = ""
TOPOLOGY_MANAGER_SCOPE = "container"
NUMERIC_ALIGN_RESOURCES = "cpu,memory"
# Ours, not Katalyst's /var/lib/katalyst/pod-resources/kubelet.sock: not kubelet's own socket either.
POD_RESOURCES_SERVER_ENDPOINT = "unix:/var/lib/koordlet/pod-resources/kubelet.sock"
ORM_DEVICES_PROVIDER = ""
ORM_KUBELET_POD_RESOURCES_ENDPOINTS = "/var/lib/kubelet/pod-resources/kubelet.sock"
ORM_RESOURCE_NAMES_MAP = ""
ORM_RECONCILE_PERIOD_SECONDS = 5.0
# QRM plugins register on <dir>/kubelet.sock (the katalyst-agent chart's directory).
QRM_SOCKET_DIRS = "/var/lib/katalyst/plugin-socks"
RESERVED_CPUS = ""
# kubelet's default: only the classes that ask for it (dedicated_cores, LSE, LSR) get exclusive CPUs.
CPU_MANAGER_POLICY = "none"
