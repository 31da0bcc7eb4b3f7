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

# While kubelet's kubepods cgroup is absent, how often the host facts look for it again, seconds.
HOST_DRIVER_REPROBE_SECONDS = 5.0

# How long SIGTERM may take before the daemon gives up waiting for modules.
SHUTDOWN_GRACE_SECONDS = 1.5

# HTTP server limits: an idle keep-alive connection is closed after this long.
HTTP_IDLE_TIMEOUT_SECONDS = 30.0
# A request's head (request line and headers) must arrive whole within this long of its
# first byte: a client trickling bytes cannot hold a connection open.
HTTP_HEAD_TIMEOUT_SECONDS = 5.0
# Connections served at once; the last HTTP_PROBE_RESERVE of them serve only /healthz and
# /readyz (liveness and readiness probes always answer), beyond the cap a connection is
# closed at once.
HTTP_MAX_CONNECTIONS = 64
HTTP_PROBE_RESERVE = 8
# A /metrics request within this long of the start of the last finished render of the same
# kind (path, gzip, format) is answered with it; requests during a render wait for it. The
# collectors sample once a second: a looping client costs one render a second, not one each.
HTTP_METRICS_REUSE_SECONDS = 1.0
# The fewest file descriptors the daemon starts with: the HTTP cap, plus the runtime, gRPC,
# sqlite, inotify and event-loop fds, plus a minimal kept-fd pool. Below it the daemon
# stops at start (exit 2) naming the limit, instead of failing later in odd places.
MIN_OPEN_FILES = HTTP_MAX_CONNECTIONS + 192
# Responses larger than this are gzip-compressed when the client accepts it.
HTTP_GZIP_MIN_BYTES = 4096
# Level 1 costs ~1/9 of level 9's CPU on a 10k-series payload (reference/machine.md).
HTTP_GZIP_LEVEL = 1
# The GIL switch interval while a worker thread renders a large text: /metrics, the report
# file (util/switch_interval.py).
RENDER_SWITCH_INTERVAL_SECONDS = 0.0005

# QoS manager (koordlet resmanager defaults, v1.1): round intervals and eviction cool-downs, seconds.
CPU_SUPPRESS_INTERVAL_SECONDS = 1
CPU_EVICT_INTERVAL_SECONDS = 1
MEMORY_EVICT_INTERVAL_SECONDS = 1
RECONCILE_INTERVAL_SECONDS = 1  # CPU burst, memory QoS, resctrl
MEMORY_EVICT_COOL_TIME_SECONDS = 4
CPU_EVICT_COOL_TIME_SECONDS = 20
# How often a --node-slo-config file is checked for changes, seconds.
NODE_SLO_POLL_SECONDS = 1.0
# A NodeSLO document larger than this is refused (a real one is a few KiB).
NODE_SLO_MAX_BYTES = 1 << 20
# How much of a refusal's reason /api/v1/nodeslo and the logs quote.
NODE_SLO_ERROR_CHARS = 512

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
# One GET /pods, connect to last byte (koordlet: --kubelet-sync-timeout=3s).
STATES_KUBELET_SYNC_TIMEOUT_SECONDS = 5.0
# kubelet's secure port (https://<node>:10250/pods): the pod's service-account token is the
# bearer token, its CA bundle verifies kubelet's serving certificate.
KUBELET_TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"
KUBELET_CA_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
# ORM (out-of-band resource manager). Katalyst's names and values unless said otherwise.
# Off unless --topology-policy-name is given (Katalyst's "" default refuses to start).
TOPOLOGY_POLICY_NAME = ""
TOPOLOGY_MANAGER_SCOPE = "container"
NUMERIC_ALIGN_RESOURCES = ("cpu", "memory")
# Ours, not Katalyst's /var/lib/katalyst/pod-resources/kubelet.sock: not kubelet's own socket either.
POD_RESOURCES_SERVER_ENDPOINT = Path("/var/lib/koordlet/pod-resources/kubelet.sock")
ORM_DEVICES_PROVIDER = ""
ORM_KUBELET_POD_RESOURCES_ENDPOINTS = ("/var/lib/kubelet/pod-resources/kubelet.sock",)
ORM_RECONCILE_PERIOD_SECONDS = 5.0
# QRM plugins register on <dir>/kubelet.sock (the katalyst-agent chart's directory).
QRM_SOCKET_DIRS = (Path("/var/lib/katalyst/plugin-socks"),)
# kubelet's default: only the classes that ask for it (dedicated_cores, LSE, LSR) get exclusive CPUs.
CPU_MANAGER_POLICY = "none"
# Metrics advisor (koordlet v1.1 metricsadvisor/config.go and metriccache/config.go).
COLLECT_RES_USED_INTERVAL_SECONDS = 1.0
PSI_COLLECTOR_INTERVAL_SECONDS = 10.0
# ours: koordlet reads containers with the pods every second
COLLECT_CONTAINER_RES_USED_INTERVAL_SECONDS = 10.0
CPI_COLLECTOR_INTERVAL_SECONDS = 60.0
COLLECT_CPI_TIMEWINDOW_SECONDS = 10.0
# Node series: 30 min (NodeMetric p99 over 30 min). Pod/container series: koordlet keeps
# them 30 min too; we keep what their readers use (podsMetric averages 300 s; the QoS loops
# look at the last minute of a container) so memory per pod stays small.
METRIC_EXPIRE_SECONDS = 1800.0
POD_METRIC_EXPIRE_SECONDS = 300.0
CONTAINER_METRIC_EXPIRE_SECONDS = 120.0
METRIC_GC_INTERVAL_SECONDS = 300.0

# Reports (issue 11). Katalyst names and values for the overcommit advisor; the targets and
# estimated loads are the seed deployment's (Katalyst's code defaults memory to 0.8 / 0.8).
SYSADVISOR_PLUGINS = ("*",)
REALTIME_OVERCOMMIT_SYNC_PERIOD_SECONDS = 10.0
REALTIME_OVERCOMMIT_CPU_TARGETLOAD = 0.6
REALTIME_OVERCOMMIT_MEM_TARGETLOAD = 0.6
REALTIME_OVERCOMMIT_ESTIMATED_CPULOAD = 0.4
REALTIME_OVERCOMMIT_ESTIMATED_MEMLOAD = 0.6
CPU_METRICS_TO_GATHER = ("cpu.usage.container",)
# Katalyst gathers mem.rss.container; the collectors here gather the working set.
MEMORY_METRICS_TO_GATHER = ("mem.usage.container",)
# NodeMetric metricCollectPolicy in standalone mode (a cluster object's spec wins):
# koordlet's defaults, floors 30 s and 60 s.
REPORT_INTERVAL_SECONDS = 60
MIN_REPORT_INTERVAL_SECONDS = 30
AGGREGATE_DURATION_SECONDS = 300
MIN_AGGREGATE_DURATION_SECONDS = 60
AGGREGATE_DURATIONS_SECONDS = (300.0, 600.0, 1800.0)
# Koordinator slo-controller: batch = allocatable - (100 - threshold)% reserve - system - non-BE usage.
CPU_RECLAIM_THRESHOLD_PERCENT = 60
MEMORY_RECLAIM_THRESHOLD_PERCENT = 65
# kubelet's --root-dir: cpu_manager_state / memory_manager_state live there.
KUBELET_ROOT_DIR = Path("/var/lib/kubelet")
# Longest a module's start() may take; past it the daemon exits 1 with a clear error
# (a module that waits for a peer does so after start, and /readyz says it is not ready).
MODULE_START_TIMEOUT_SECONDS = 60.0

# The daemon's API client: koordlet's client-side limits (kube-api-qps / kube-api-burst)
KUBE_API_QPS = 20.0
KUBE_API_BURST = 30

# The young garbage collection threshold after start-up (koordlet/daemon/gc_policy.py): the
# interpreter's own; with survivors frozen, a higher one only makes each young pause longer.
GC_YOUNG_THRESHOLD = 700
