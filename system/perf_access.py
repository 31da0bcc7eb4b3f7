"""Whether this process may count perf events in cgroup mode, and what it costs in fds.

Cgroup-mode events are per-CPU events (``cpu >= 0``); the kernel refuses them to a process
without CAP_PERFMON or CAP_SYS_ADMIN when ``/proc/sys/kernel/perf_event_paranoid`` is 1 or
more (Documentation/admin-guide/perf-security.rst). Each open group holds one fd per event
per CPU until it is closed, so callers budget ``fd_cost`` against ``read_fd_headroom``.
"""

from __future__ import annotations

import errno as errno_codes
import os
import resource
from enum import Enum
from pathlib import Path

from system.errors import InvalidValue, SystemFileError
from system.host import Host

CAP_SYS_ADMIN = 21
CAP_PERFMON = 38  # Linux >= 5.8
# paranoid level above which per-CPU (and so cgroup-mode) events need a capability
MAX_UNPRIVILEGED_CPU_PARANOID = 0
# fds kept free for everything else the daemon opens (sockets, cgroup files, sqlite)
DEFAULT_FD_RESERVE = 256
_NR_OPEN_DEFAULT = 1 << 20


class PerfUnavailableReason(Enum):
    EXTENSION_MISSING = "extension_missing"  # system._perf_ext was not built
    KERNEL_WITHOUT_PERF = "kernel_without_perf"  # ENOSYS, or no perf_event_paranoid file
    EVENT_UNSUPPORTED = "event_unsupported"  # ENOENT/EOPNOTSUPP: e.g. no hardware PMU
    NOT_PERMITTED = "not_permitted"  # EACCES/EPERM: paranoid level or missing capability
    FD_LIMIT = "fd_limit"  # EMFILE/ENFILE, or the caller's budget would be exceeded
    CPU_OFFLINE = "cpu_offline"  # ENODEV/ENXIO: the cpu went away
    INVALID = "invalid"  # EINVAL/EBADF: an attribute or fd the kernel refused
    OTHER = "other"


class PerfUnavailable(SystemFileError):
    """perf counting cannot be done here; ``errno`` and ``reason`` say why."""

    def __init__(
        self,
        message: str,
        errno: int,
        reason: PerfUnavailableReason,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.errno = errno
        self.reason = reason
        name = errno_codes.errorcode.get(errno, str(errno))
        super().__init__("%s [%s, %s]" % (message, name, reason.value), path)


_REASONS = {
    errno_codes.ENOENT: PerfUnavailableReason.EVENT_UNSUPPORTED,
    errno_codes.EOPNOTSUPP: PerfUnavailableReason.EVENT_UNSUPPORTED,
    errno_codes.ENOSYS: PerfUnavailableReason.KERNEL_WITHOUT_PERF,
    errno_codes.EACCES: PerfUnavailableReason.NOT_PERMITTED,
    errno_codes.EPERM: PerfUnavailableReason.NOT_PERMITTED,
    errno_codes.EMFILE: PerfUnavailableReason.FD_LIMIT,
    errno_codes.ENFILE: PerfUnavailableReason.FD_LIMIT,
    errno_codes.ENODEV: PerfUnavailableReason.CPU_OFFLINE,
    errno_codes.ENXIO: PerfUnavailableReason.CPU_OFFLINE,
    errno_codes.EINVAL: PerfUnavailableReason.INVALID,
    errno_codes.EBADF: PerfUnavailableReason.INVALID,
}


def reason_for_errno(code: int) -> PerfUnavailableReason:
    """The documented meaning of a perf_event_open errno (perf_event_open(2), ERRORS)."""
    return _REASONS.get(code, PerfUnavailableReason.OTHER)


def cgroup_events_allowed(paranoid: int, privileged: bool) -> bool:
    """Per-CPU events: always with CAP_PERFMON/CAP_SYS_ADMIN, else only at paranoid <= 0."""
    return privileged or paranoid <= MAX_UNPRIVILEGED_CPU_PARANOID


def has_perf_capability(cap_eff: int) -> bool:
    """Whether an effective capability mask holds CAP_PERFMON or CAP_SYS_ADMIN."""
    return bool(cap_eff & ((1 << CAP_PERFMON) | (1 << CAP_SYS_ADMIN)))


def parse_cap_eff(status_text: str) -> int:
    """The ``CapEff:`` hex mask of a /proc/<pid>/status text."""
    for line in status_text.splitlines():
        key, _, value = line.partition(":")
        if key == "CapEff":
            try:
                return int(value.strip(), 16)
            except ValueError:
                break
    raise InvalidValue("status text has no valid CapEff line")


def fd_cost(n_events: int, n_cpus: int) -> int:
    """fds one open cgroup group set holds: one per event per CPU (the cgroup dir fd is
    closed as soon as the events are open, so it is not counted)."""
    return n_events * n_cpus


def fd_headroom(soft_limit: int, open_fds: int, reserve: int = DEFAULT_FD_RESERVE, promised: int = 0) -> int:
    """fds still free for perf groups; never negative. An infinite limit counts as 2**20.
    `promised`: fds not open yet that another user may still open (the kept-fd pool's
    budget minus what it holds now, which `open_fds` already counts)."""
    if soft_limit == resource.RLIM_INFINITY or soft_limit < 0:
        soft_limit = _NR_OPEN_DEFAULT
    return max(0, soft_limit - open_fds - reserve - max(0, promised))


# ------------------------------------------------------------------ IO shells

def read_perf_event_paranoid(host: Host) -> int:
    """The paranoid level; PerfUnavailable(ENOENT) when the kernel has no perf events."""
    path = host.proc("sys", "kernel", "perf_event_paranoid")
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise PerfUnavailable(
            "kernel has no perf events", errno_codes.ENOENT,
            PerfUnavailableReason.KERNEL_WITHOUT_PERF, path,
        ) from None
    except OSError as exc:
        code = exc.errno or errno_codes.EIO
        raise PerfUnavailable("cannot read", code, reason_for_errno(code), path) from None
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidValue("bad perf_event_paranoid %r" % text, path) from None


def read_perf_privileged(host: Host) -> bool:
    """Whether this process holds CAP_PERFMON or CAP_SYS_ADMIN."""
    path = host.proc("self", "status")
    try:
        return has_perf_capability(parse_cap_eff(path.read_text()))
    except OSError:
        return os.geteuid() == 0


def check_cgroup_events_allowed(host: Host) -> None:
    """PerfUnavailable(EACCES) when paranoid forbids cgroup-mode events to this process."""
    paranoid = read_perf_event_paranoid(host)
    if not cgroup_events_allowed(paranoid, read_perf_privileged(host)):
        raise PerfUnavailable(
            "perf_event_paranoid=%d forbids per-CPU events without CAP_PERFMON" % paranoid,
            errno_codes.EACCES, PerfUnavailableReason.NOT_PERMITTED,
            host.proc("sys", "kernel", "perf_event_paranoid"),
        )


def read_fd_headroom(reserve: int = DEFAULT_FD_RESERVE, fd_dir: Path | None = None, promised: int = 0) -> int:
    """fds this process may still open for perf groups under its RLIMIT_NOFILE soft limit,
    leaving `promised` more for a kept-fd pool still below its budget.

    Counts /proc/self/fd (one listdir: call it once per collection cycle, not per group).
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    directory = fd_dir if fd_dir is not None else Path("/proc/self/fd")
    try:
        open_fds = len(os.listdir(directory))
    except OSError:
        raise PerfUnavailable(
            "cannot count open fds", errno_codes.ENOENT, PerfUnavailableReason.OTHER, directory
        ) from None
    return fd_headroom(soft, open_fds, reserve, promised)


def raise_fd_limit(wanted: int | None = None) -> int:
    """Raise this process's RLIMIT_NOFILE soft limit towards the hard limit (to ``wanted``
    when given and lower); returns the soft limit now in force. systemd starts services at
    a soft limit of 1024, which 2 events x 64 CPUs exhaust with 8 containers."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # an infinite hard limit still stops at fs.nr_open (1 << 20 by default)
    ceiling = _NR_OPEN_DEFAULT if hard == resource.RLIM_INFINITY else hard
    target = ceiling if wanted is None else min(wanted, ceiling)
    if soft == resource.RLIM_INFINITY or target <= soft:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):  # above fs.nr_open: keep what we have
        return soft
    return target

