"""Flags and config file to a Config: the sections' declarations (option.py) make the
argparse parser, the config file's keys, the values and the README rows. Flags win over
the file; the file wins over the declared defaults."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NoReturn, Sequence

from koordlet import __version__
from koordlet.config import go_flags, safe_yaml
from koordlet.config.common import CommonOptions, RuntimeOptions
from koordlet.config.errors import ConfigError
from koordlet.config.features import describe
from koordlet.config.option import Declared, declared
from koordlet.config.reading import FileRefused, bounded, read_text_file
from koordlet.config.root import Config

BUILT_IN = (CommonOptions, RuntimeOptions)
CONFIG_FILE_HELP = "a YAML or JSON file with the same keys (dashes or underscores); flags win"
# a --config file larger than this is refused (a real one is a few KiB)
CONFIG_FILE_MAX_BYTES = 1 << 20


def _all_sections(sections: Iterable[type]) -> tuple[type, ...]:
    extra = tuple(s for s in sections if s not in BUILT_IN)
    return BUILT_IN + extra


def _options(sections: Iterable[type]) -> dict[str, tuple[type, Declared]]:
    """flag -> (section, declaration); a flag declared twice is a programming error."""
    found: dict[str, tuple[type, Declared]] = {}
    for section in _all_sections(sections):
        for item in declared(section):
            if item.flag in found:
                raise RuntimeError(f"option --{item.flag} is declared twice ({found[item.flag][0].__name__}, "
                                   f"{section.__name__})")
            found[item.flag] = (section, item)
    return found


class _Parser(argparse.ArgumentParser):
    """An unknown or malformed flag is a ConfigError of one line (exit 2 in main), not
    argparse's usage dump."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message} (see koordlet --help)")


def _formatter(prog: str) -> argparse.HelpFormatter:
    """argparse's own formatter, its width found without shutil: argparse imports shutil
    for the terminal's width whenever none is given, at every add_argument, and shutil
    brings bz2 and lzma (~0.5 MiB of the daemon's RSS) into a daemon that uses none of them.
    The same rule as shutil.get_terminal_size: $COLUMNS, else stdout's terminal, else 80."""
    return argparse.RawDescriptionHelpFormatter(prog, width=_terminal_columns() - 2)


def _terminal_columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def build_parser(sections: Iterable[type] = ()) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="koordlet",
        description="Node-local colocation agent: NRI plugin, cgroup QoS, metrics, topology.",
        epilog="feature gates (name=default (stage)):\n" + describe(),
        formatter_class=_formatter,
        argument_default=argparse.SUPPRESS,  # only flags given on the command line appear
        allow_abbrev=False,  # --v is not --version: only whole flag names
    )
    for flag, (_, item) in _options(sections).items():
        parser.add_argument(f"--{flag}", dest=flag, metavar=flag.split("-")[-1].upper(),
                            choices=item.option.choices,
                            help=f"{item.option.help} (default: {item.shown_default})".replace("`", ""))
    parser.add_argument("--config", dest="config", metavar="FILE", help=CONFIG_FILE_HELP)
    parser.add_argument("--version", action="version", version=f"koordlet-py {__version__}")
    return parser


def load_config_file(path: Path, known: Iterable[str]) -> dict[str, Any]:
    """Read a YAML/JSON mapping whose keys are flag names (dashes or underscores)."""
    try:
        text = read_text_file(path, CONFIG_FILE_MAX_BYTES)
    except FileRefused as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        data = json.loads(text) if kind == "JSON" else safe_yaml.load(text)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(bounded(f"config file {path} is not valid {kind}: {exc}")) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of flag names to values")
    names = set(known)
    result: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key).replace("_", "-")
        if key not in names:
            raise ConfigError(f"config file {path}: unknown key {bounded(repr(raw_key), 80)}")
        result[key] = value
    return result


def parse_args(argv: Sequence[str] | None, sections: Iterable[type] = ()) -> Config:
    """Flags over file over defaults. Raises ConfigError on any bad value. koordlet's
    command line (Go flag syntax, its flag names, klog's flags) is taken as go_flags says."""
    sections = _all_sections(sections)
    options = _options(sections)
    booleans = {flag: isinstance(item.default, bool) for flag, (_, item) in options.items()}
    args, notices = go_flags.normalize(sys.argv[1:] if argv is None else argv, booleans)
    namespace = vars(build_parser(sections).parse_args(args))
    config_path = Path(namespace.pop("config")) if "config" in namespace else None
    merged: dict[str, Any] = load_config_file(config_path, options) if config_path else {}
    merged.update(namespace)
    config = compose(merged, sections, config_path)
    return dataclasses.replace(config, notices=tuple(notices)) if notices else config


def compose(values: Mapping[str, Any], sections: Iterable[type] = (), config_path: Path | None = None) -> Config:
    """A Config from raw values by flag name (text, or YAML scalars), the rest defaulted."""
    sections = _all_sections(sections)
    options = _options(sections)
    per_section: dict[type, dict[str, Any]] = {section: {} for section in sections}
    for flag, raw in values.items():
        section, item = options[flag]
        per_section[section][item.name] = _value(item, raw)
    common = per_section[CommonOptions]
    if not common.get("node_name"):
        common["node_name"] = socket.gethostname()
    built = {section: _section(section, kwargs) for section, kwargs in per_section.items()}
    config = Config(common=built.pop(CommonOptions), runtime=built.pop(RuntimeOptions),
                    sections=MappingProxyType(built), config_file=config_path)
    parse_addr(config.common.addr)
    for section in built.values():
        check = getattr(section, "check", None)
        if check is not None:
            check(config)
    return config


def _section(section: type, kwargs: dict[str, Any]) -> Any:
    try:
        return section(**kwargs)
    except ValueError as exc:  # a section's own cross-field rule (__post_init__)
        raise ConfigError(str(exc)) from exc


def _value(item: Declared, raw: Any) -> Any:
    if raw is None:
        return None
    if item.flag == "feature-gates" and isinstance(raw, dict):  # a config file may give a mapping
        raw = ",".join(f"{name}={str(value).lower() if isinstance(value, bool) else value}"
                       for name, value in raw.items())
    if isinstance(raw, (dict, list)):
        raise ConfigError(f"{item.flag}: expected a single value, got {type(raw).__name__}")
    text = str(raw).lower() if isinstance(raw, bool) else str(raw)  # YAML gives true, not "true"
    try:
        value = item.option.parse(text)
    except ValueError as exc:
        raise ConfigError(f"{item.flag}: {exc}") from exc
    if item.option.choices and value not in item.option.choices:
        raise ConfigError(f"{item.flag}: {raw!r} is not one of {', '.join(item.option.choices)}")
    return value


def parse_addr(addr: str) -> tuple[str | None, int]:
    """Split `[host]:port` into (host or None for all interfaces, port)."""
    host, sep, port_text = addr.rpartition(":")
    if not sep:
        raise ConfigError(f"addr {addr!r} must be [host]:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(f"addr {addr!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"addr {addr!r}: port out of range")
    return (host or None), port


def flag_rows(sections: Iterable[type] = ()) -> list[str]:
    """The README's flag table rows, one per declared option."""
    rows = [f"| `--{flag}` | `{item.shown_default}` | {item.option.help.replace('|', '&#124;')} |"
            for flag, (_, item) in _options(sections).items()]
    rows.append(f"| `--config` | `none` | {CONFIG_FILE_HELP} |")
    return rows


def flag_names(sections: Iterable[type] = ()) -> tuple[str, ...]:
    return tuple(_options(sections))


def section_fields(section: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(section))
