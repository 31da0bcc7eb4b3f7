"""The daemon's command line: the daemon-wide sections and every agent's own, composed.

`python -m koordlet.daemon.cli README.md` (`make docs`) rewrites README's flag table from
the declarations."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from koordlet.agents import AGENTS
from koordlet.config import Config, command_line
from koordlet.metriccache.options import MetricCacheOptions

# the metric cache is a hub, not an agent: its section is the daemon's to add
SECTIONS: tuple[type, ...] = (MetricCacheOptions,) + tuple(spec.options for spec in AGENTS if spec.options)


def parse_args(argv: Sequence[str] | None = None) -> Config:
    """Flags over the --config file over the defaults; ConfigError on any bad value."""
    return command_line.parse_args(argv, SECTIONS)


def compose(values: Mapping[str, Any]) -> Config:
    """A Config from values by flag name (as text), the rest defaulted: for tests and tools."""
    return command_line.compose(values, SECTIONS)


def build_parser() -> argparse.ArgumentParser:
    return command_line.build_parser(SECTIONS)


def flag_rows() -> list[str]:
    """The README's flag table, one row per option, from the declarations."""
    return command_line.flag_rows(SECTIONS)


def rewrite_flag_table(readme: Path) -> None:
    """Replace the table between README's flags markers with the declarations' rows."""
    text = readme.read_text()
    begin, end = text.index(FLAGS_BEGIN) + len(FLAGS_BEGIN), text.index(FLAGS_END)
    table = "\n".join(["", "| flag | default | meaning |", "|---|---|---|", *flag_rows(), ""])
    readme.write_text(text[:begin] + table + text[end:])


FLAGS_BEGIN = "<!-- flags:begin -->"
FLAGS_END = "<!-- flags:end -->"

if __name__ == "__main__":
    rewrite_flag_table(Path(sys.argv[1]))
