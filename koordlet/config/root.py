"""The whole configuration: the daemon-wide sections plus one section per agent, looked up
by its class (`config[QoSOptions]`). A section nobody parsed answers with its defaults, so
tests and tools can build a Config with only what they need."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, TypeVar

from koordlet.config.common import CommonOptions, RuntimeOptions

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Config:
    common: CommonOptions = field(default_factory=CommonOptions)
    runtime: RuntimeOptions = field(default_factory=RuntimeOptions)
    sections: Mapping[type, Any] = field(default_factory=lambda: MappingProxyType({}))
    config_file: Path | None = None
    # what the command line's koordlet/klog flags did (ignored ones), logged at start
    notices: tuple[str, ...] = ()

    def __getitem__(self, section: type[S]) -> S:
        found = self.sections.get(section)
        return found if found is not None else section()
