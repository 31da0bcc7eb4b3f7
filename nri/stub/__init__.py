"""The plugin side of NRI: connect, register, configure, dispatch events, reconnect.

Public API:
    Stub, StubConfig            run a plugin object against a runtime
    RuntimeInfo                 what Configure said about the runtime
    DeadlinePolicy              the deadline guard's fraction (default 0.75)
    BackoffPolicy               reconnect delays (runtimes that refuse us or drop us)
    WatchPolicy                 how often to dial while the socket is absent (inotify wakes us sooner)
    AdjustmentRejected          raise from validate_container_adjustment to reject
    StubError and subclasses    NotConnected, UpdateInsideHandler, InvalidIdentity, ...
"""

from nri.stub.backoff import BackoffPolicy
from nri.stub.deadline import DeadlinePolicy
from nri.stub.dispatch import RuntimeInfo
from nri.stub.errors import (
    AdjustmentRejected,
    InvalidIdentity,
    InvalidPlugin,
    NotConnected,
    RegistrationFailed,
    StubError,
    UpdateInsideHandler,
)
from nri.stub.socket_watch import WatchPolicy
from nri.stub.stub import Stub, StubConfig

__all__ = [
    "AdjustmentRejected",
    "BackoffPolicy",
    "DeadlinePolicy",
    "InvalidIdentity",
    "InvalidPlugin",
    "NotConnected",
    "RegistrationFailed",
    "RuntimeInfo",
    "Stub",
    "StubConfig",
    "StubError",
    "UpdateInsideHandler",
    "WatchPolicy",
]
