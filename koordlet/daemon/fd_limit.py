"""The open-files floor, checked before anything heavy is imported: grpc starts pollers
that need fds of their own as soon as it is loaded, and under a tiny RLIMIT_NOFILE they
failed at exit (epoll_wait EBADF, the process hanging up to ~20 s or dying) after the
daemon had already said why it stopped."""

from __future__ import annotations

from koordlet.agent import StartupError
from koordlet.config import defaults
from system.perf_access import raise_fd_limit


def check_open_files(soft_limit: int, needed: int = defaults.MIN_OPEN_FILES) -> None:
    """StartupError (exit 2) when RLIMIT_NOFILE, raised as far as allowed, is below need."""
    if soft_limit < needed:
        raise StartupError(f"RLIMIT_NOFILE is {soft_limit}, the daemon needs at least {needed} "
                           "(raise it: ulimit -n, or LimitNOFILE= in the unit)", exit_code=2)


def ensure_open_files() -> None:
    """Raise the soft limit as far as allowed; StartupError (exit 2) if that is too few."""
    check_open_files(raise_fd_limit())
