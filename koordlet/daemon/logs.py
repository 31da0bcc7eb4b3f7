"""One log pipeline: structlog events and every stdlib logger (asyncio, grpc, libraries) go
through the same processors to one handler on stderr, so a line is JSON in a pod or when
stderr is not a terminal, a console line on a terminal, whoever wrote it.

Events carry one name and key=value context. What came from the stdlib carries its text
as the event and its logger's name."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

from koordlet.config import in_pod

# Loggers of libraries that chatter at INFO about things the daemon reports itself.
_QUIET = {"grpc": logging.WARNING, "httpx": logging.WARNING, "httpcore": logging.WARNING}


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
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, renderer],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric)
    for name, floor in _QUIET.items():
        logging.getLogger(name).setLevel(max(floor, numeric))
    logging.captureWarnings(True)
