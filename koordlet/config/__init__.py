"""The daemon's configuration: sections of options declared once (option.py), the
daemon-wide ones here (common.py), each agent's in its package (koordlet/<agent>/options.py);
flags and an optional YAML/JSON file with the same keys (command_line.py, flags win);
every default in defaults.py; feature gates in features.py. The daemon composes the
sections of its agents (koordlet.daemon.cli.parse_args)."""

from koordlet.config.command_line import parse_addr
from koordlet.config.common import CommonOptions, RuntimeOptions, in_pod
from koordlet.config.errors import ConfigError
from koordlet.config.root import Config

__all__ = ["CommonOptions", "Config", "ConfigError", "RuntimeOptions", "in_pod", "parse_addr"]
