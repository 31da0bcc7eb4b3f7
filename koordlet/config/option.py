"""One declaration per option: a field of a frozen section dataclass made with `option()`
carries its default, its parser, its help and its choices. From it come the field, the
command-line flag (`--` + the field name with dashes: `cpu_suppress_interval_seconds` ->
`--cpu-suppress-interval-seconds`), the key in a config file, and the README row.

A section is a frozen dataclass of such fields; each agent declares its own
(koordlet/<agent>/options.py), the daemon-wide ones live in koordlet/config/common.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

_META = "koordlet.option"


@dataclass(frozen=True, slots=True)
class Option:
    help: str
    # Turns the flag's text into the value; raises ValueError with a message for the user.
    parse: Callable[[str], Any]
    choices: tuple[str, ...] | None = None
    shown_default: str | None = None  # how --help and README name a default that is computed


@dataclass(frozen=True, slots=True)
class Declared:
    """One option as a section declares it."""

    name: str  # the field name
    flag: str  # the flag without its dashes, and the config-file key
    default: Any
    option: Option

    @property
    def shown_default(self) -> str:
        if self.option.shown_default is not None:
            return self.option.shown_default
        if self.default is None or self.default == "" or self.default == () or self.default == {}:
            return "none"
        if isinstance(self.default, (tuple, frozenset)):
            return ",".join(str(item) for item in sorted(self.default, key=str))
        if isinstance(self.default, bool):
            return str(self.default).lower()
        return str(self.default)


def option(default: Any, help: str, parse: Callable[[str], Any] = str, *,
           choices: tuple[str, ...] | None = None, shown_default: str | None = None) -> Any:
    """A section field declared as an option (see the module's docstring)."""
    metadata = {_META: Option(help, parse, choices, shown_default)}
    if isinstance(default, Mapping):  # read-only, but not hashable: dataclasses want a factory
        return dataclasses.field(default_factory=lambda: default, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def declared(section: type) -> Iterator[Declared]:
    """The options of a section class, in declaration order."""
    for field in dataclasses.fields(section):
        found = field.metadata.get(_META)
        if isinstance(found, Option):
            default = field.default
            if default is dataclasses.MISSING and field.default_factory is not dataclasses.MISSING:
                default = field.default_factory()
            yield Declared(field.name, field.name.replace("_", "-"), default, found)
