"""The daemon's one way to reach the API server: one asyncio lightkube client per daemon
(one connection pool), built from --kubeconfig or from the pod's service account.

lightkube was chosen by measurement (bench/k8s_client_choice.py: lowest import time and
RSS of the four candidates, native asyncio, PUT of the status subresource). It is the
optional extra `koordlet-py[kube]`: it is imported only here, and only when the daemon
is not standalone, so a standalone node never pays for it.

`KubeApi` is the hub: a module that needs the API (reports, NodeSLO, evictions) calls
`acquire()` in its start() and `release()` in its stop(); the client opens on the first
acquire and closes when the last user lets go. Every request it sends:
- names us: `User-Agent: koordlet-py/<version> (<os>/<arch>) <node>`, so audit logs and
  API Priority and Fairness can tell the agent from any other Python client;
- waits for a token of the client-side limiter (`--kube-api-qps`, `--kube-api-burst`,
  koordlet's flags and defaults), as client-go's rate limiter does;
- logs each distinct `Warning` header the server answers once (deprecations, unknown
  fields dropped) instead of on every report.
"""

from __future__ import annotations

import asyncio
import platform
from typing import TYPE_CHECKING, Any, Callable

import structlog

from koordlet import __version__
from koordlet.config import Config
from koordlet.util.token_bucket import TokenBucket

if TYPE_CHECKING:
    from lightkube import AsyncClient

log = structlog.get_logger(__name__)

FIELD_MANAGER = "koordlet"
REQUEST_TIMEOUT_SECONDS = 10.0
WARNINGS_REMEMBERED = 64


class KubeClientError(RuntimeError):
    """No client can be built: the extra is not installed or the kubeconfig is unusable."""


def user_agent(node_name: str) -> str:
    machine = platform.machine() or "unknown"
    return "koordlet-py/%s (%s/%s) %s" % (__version__, platform.system().lower() or "linux", machine, node_name)


class RequestHooks:
    """What every request of the daemon's client goes through (httpx event hooks)."""

    def __init__(self, agent: str, limiter: TokenBucket, sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        self.agent = agent
        self.limiter = limiter
        self.sleep = sleep
        self.warned: set[str] = set()
        self.throttled_seconds = 0.0

    async def on_request(self, request: Any) -> None:
        request.headers["User-Agent"] = self.agent
        wait = self.limiter.reserve()
        if wait > 0:
            self.throttled_seconds += wait
            await self.sleep(wait)

    async def on_response(self, response: Any) -> None:
        for warning in response.headers.get_list("warning"):
            if warning not in self.warned and len(self.warned) < WARNINGS_REMEMBERED:
                self.warned.add(warning)
                log.warning("kube_api_warning", warning=warning, method=response.request.method,
                            path=response.request.url.path, note="logged once per distinct warning")


def open_kube_client(config: Config, timeout_seconds: float = REQUEST_TIMEOUT_SECONDS) -> "AsyncClient":
    try:
        import httpx2
        import yaml  # here, not at import: only a daemon with a cluster loads a kubeconfig
        from lightkube import AsyncClient, KubeConfig
        from lightkube.core.exceptions import ConfigError
    except ImportError as exc:
        raise KubeClientError("the Kubernetes client is not installed (pip install 'koordlet-py[kube]'): %s"
                              % exc) from None
    try:
        if config.common.kubeconfig is not None:
            kube_config = KubeConfig.from_file(config.common.kubeconfig)
        else:
            kube_config = KubeConfig.from_service_account()
    except (ConfigError, OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise KubeClientError("cannot load kubeconfig %s: %s"
                              % (config.common.kubeconfig or "(service account)", exc)) from None
    client = AsyncClient(kube_config, timeout=httpx2.Timeout(timeout_seconds), field_manager=FIELD_MANAGER,
                         trust_env=False)
    transport = _httpx_client_of(client, httpx2.AsyncClient)
    hooks = RequestHooks(user_agent(config.common.node_name),
                         TokenBucket(config.common.kube_api_qps, config.common.kube_api_burst))
    transport.event_hooks = {"request": [hooks.on_request], "response": [hooks.on_response]}
    return client


def _httpx_client_of(client: Any, kind: type) -> Any:
    """lightkube keeps its httpx client two levels down; hooks go there (checked, since a
    lightkube release could move it: then no client rather than an unnamed one)."""
    inner = getattr(getattr(client, "_client", None), "_client", None)
    if not isinstance(inner, kind):
        raise KubeClientError("this lightkube release keeps no httpx client where koordlet-py expects it")
    return inner


async def put_text(client: "AsyncClient", resource: Any, name: str, body: str) -> str:
    """PUT `body`, a JSON text made by the caller, where lightkube's replace of `resource`
    named `name` would send it (the same URL, parameters, hooks and errors: lightkube's
    ApiError), and answer the response's text undecoded. lightkube's replace encodes a dict
    and decodes the answer, each in one C call that holds the loop (~2 and ~1 ms for a
    1,000-pod NodeMetric)."""
    import httpx2

    generic: Any = getattr(client, "_client", None)
    if not all(hasattr(generic, attr) for attr in ("prepare_request", "send", "raise_for_status")):
        raise KubeClientError("this lightkube release has no request methods where koordlet-py expects them")
    transport = _httpx_client_of(client, httpx2.AsyncClient)
    prepared = generic.prepare_request("put", resource, obj={}, name=name)
    request = transport.build_request(prepared.method, prepared.url, params=prepared.params, content=body.encode(),
                                      headers={"Content-Type": "application/json"})
    response = await generic.send(request)
    generic.raise_for_status(response)
    return response.content.decode()


class KubeApi:
    """The daemon's one API client, shared by every module that needs it."""

    def __init__(self, config: Config, opener: Callable[[Config], Any] = open_kube_client) -> None:
        self._config = config
        self._opener = opener
        self._client: Any = None
        self._users = 0

    def acquire(self) -> Any:
        """The shared client (opened now if nobody holds it); KubeClientError when it cannot be."""
        if self._client is None:
            self._client = self._opener(self._config)
        self._users += 1
        return self._client

    async def release(self) -> None:
        if self._users == 0:
            return
        self._users -= 1
        if self._users == 0 and self._client is not None:
            client, self._client = self._client, None
            await client.close()
