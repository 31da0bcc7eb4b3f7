"""structlog set-up: one event name per line with key=value context; JSON lines
in a pod or when stderr is not a terminal, console lines on a terminal."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

from koordlet.config import in_pod


def choose_format(requested: str, stream: TextIO) -> str:
    if requested != "auto":
        return requested
    return "console" if stream.isatty() and not in_pod() else "json"


def configure_logging(level: str, fmt: str = "auto", stream: TextIO = sys.stderr) -> None:
    numeric = logging.getLevelName(level.upper())
    renderer: structlog.typing.Processor
    if choose_format(fmt, stream) == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(stream),
        cache_logger_on_first_use=True,
    )
