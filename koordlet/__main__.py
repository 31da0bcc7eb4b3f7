"""Entry point: `koordlet` and `python -m koordlet`."""

from __future__ import annotations

import asyncio
import sys
from typing import Sequence

import structlog

from koordlet.config import ConfigError
from koordlet.daemon.cli import parse_args
from koordlet.daemon.logs import configure_logging


def main(argv: Sequence[str] | None = None) -> int:
    try:
        config = parse_args(argv)
    except ConfigError as exc:
        print(f"koordlet: {exc}", file=sys.stderr)
        return 2
    configure_logging(config.common.log_level, config.common.log_format)
    from koordlet.daemon.glibc_heap import fix_mmap_threshold, limit_arenas
    limit_arenas()  # before any thread allocates
    fix_mmap_threshold()
    from koordlet.agent import StartupError
    from koordlet.daemon.fd_limit import ensure_open_files
    try:
        ensure_open_files()  # before the wiring imports grpc, whose pollers need fds of their own
    except StartupError as exc:
        structlog.get_logger("koordlet").error("startup_failed", error=str(exc))
        return exc.exit_code
    from koordlet.daemon.wiring import loop_factory, run

    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(run(config))


if __name__ == "__main__":
    sys.exit(main())
