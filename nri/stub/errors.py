"""Errors of the plugin stub."""

from __future__ import annotations


class StubError(Exception):
    """Base of every error the stub raises."""


class InvalidIdentity(StubError, ValueError):
    """Plugin name or index the runtime would reject."""


class InvalidPlugin(StubError, TypeError):
    """The plugin object defines no event handler (nothing to subscribe to)."""


class NotConnected(StubError):
    """No runtime connection right now (for update_containers)."""


class UpdateInsideHandler(StubError):
    """update_containers() awaited inside an event handler: containerd holds its NRI
    lock while it waits for the handler, so the call would block until the request
    timeout and get the plugin dropped. Issue it from a separate task instead."""


class RegistrationFailed(StubError):
    """The runtime refused or ignored RegisterPlugin."""


class AdjustmentRejected(StubError):
    """Raised by a validate_container_adjustment handler to reject with a reason."""
