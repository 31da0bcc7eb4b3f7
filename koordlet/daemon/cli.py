"""The daemon's command line: the daemon-wide sections and every agent's own, composed.

`python -m koordlet.daemon.cli README.md` (`make docs`) rewrites README's tables of flags,
koordlet's flags and feature gates from the declarations."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from koordlet.agents import AGENTS
from koordlet.config import Config, command_line, go_flags
from koordlet.config.features import gate_rows
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


def koordlet_flag_rows() -> list[str]:
    return go_flags.koordlet_flag_rows(command_line.flag_names(SECTIONS))


# README's generated tables: marker name -> (header, rows)
TABLES: Mapping[str, tuple[str, Callable[[], list[str]]]] = {
    "flags": ("| flag | default | meaning |\n|---|---|---|", flag_rows),
    "koordlet-flags": ("| koordlet flag | here |\n|---|---|", koordlet_flag_rows),
    "gates": ("| gate | default | koordlet's default | stage | implemented | what it switches |\n|---|---|---|---|---|---|",
              gate_rows),
}


def table_span(text: str, name: str) -> tuple[int, int]:
    begin_marker, end_marker = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    return text.index(begin_marker) + len(begin_marker), text.index(end_marker)


def rewrite_tables(readme: Path) -> None:
    """Replace each generated table between its README markers."""
    text = readme.read_text()
    for name, (header, rows) in TABLES.items():
        begin, end = table_span(text, name)
        text = text[:begin] + "\n".join(["", header, *rows(), ""]) + text[end:]
    readme.write_text(text)

if __name__ == "__main__":
    rewrite_tables(Path(sys.argv[1]))
