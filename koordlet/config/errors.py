"""The one error the configuration raises."""


class ConfigError(ValueError):
    """The configuration cannot be used; the message says why."""
