"""Where the NodeSLO comes from in standalone mode."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from koordlet.config.option import option
from koordlet.config.parsers import parse_optional_path


@dataclass(frozen=True, slots=True)
class NodeSLOOptions:
    node_slo_config: Path | None = option(
        None,
        "standalone NodeSLO: a YAML/JSON NodeSLO `spec` (or a whole NodeSLO object); re-read when it changes;"
        " an invalid document is refused naming the field and the last good one stays",
        parse_optional_path)
