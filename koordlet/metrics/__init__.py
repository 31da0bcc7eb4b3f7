"""Prometheus metrics of the daemon: the registry every module registers on,
and the collectors for the daemon's own health.

prometheus_client's package imports its exposition module, and with it http.server,
urllib.request, wsgiref and email (34 modules, ~2.8 MiB of the daemon's RSS at /readyz); the
daemon serves /metrics itself and uses none of them. When nothing has imported the package
yet, it is registered here without running its __init__, so that the daemon's modules can
import the submodules they use (through koordlet.metrics.client); the package runs its
__init__ the first time anything asks it for a name it does not have yet, so an `import
prometheus_client` elsewhere in the process (tests, tools) gets the whole package as usual."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading


def _register_bare_package() -> None:
    if "prometheus_client" in sys.modules:
        return
    spec = importlib.util.find_spec("prometheus_client")
    if spec is None or spec.loader is None:
        raise ImportError("prometheus_client is not installed")
    package = importlib.util.module_from_spec(spec)
    completing = threading.Lock()

    def complete(name: str) -> object:
        if name.startswith("__") and name != "__all__":
            raise AttributeError(name)
        if importlib.util.find_spec("prometheus_client." + name) is not None:
            return importlib.import_module("prometheus_client." + name)  # a submodule (`from . import x`)
        with completing:  # (a thread that asks meanwhile waits for the whole package)
            if "__getattr__" in package.__dict__:
                spec.loader.exec_module(package)  # type: ignore[union-attr]
                del package.__dict__["__getattr__"]
        try:
            return package.__dict__[name]
        except KeyError:
            raise AttributeError("module 'prometheus_client' has no attribute %r" % name) from None

    package.__getattr__ = complete  # type: ignore[method-assign]
    sys.modules["prometheus_client"] = package


_register_bare_package()

from prometheus_client.metrics import disable_created_metrics  # noqa: E402

# Go's client emits no *_created series; dashboards and alerts written for koordlet see
# none here either (and each one is a series Prometheus would store). Every package that
# defines or serves metrics imports koordlet.metrics first.
disable_created_metrics()
