"""The daemon's one way to reach the API server: an asyncio lightkube client built from
--kubeconfig, or from the pod's service account when running in a pod.

lightkube was chosen by measurement (bench/k8s_client_choice.py: lowest import time and
RSS of the four candidates, native asyncio, PUT of the status subresource). It is the
optional extra `koordlet-py[kube]`: it is imported only here, and only when the daemon
is not standalone, so a standalone node never pays for it.

Any module that needs the API (reports, QoS evictions) calls `open_kube_client(config)`
in its start() and closes the client in its stop().
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import yaml

from koordlet.config import Config

if TYPE_CHECKING:
    from lightkube import AsyncClient

FIELD_MANAGER = "koordlet"
REQUEST_TIMEOUT_SECONDS = 10.0


class KubeClientError(RuntimeError):
    """No client can be built: the extra is not installed or the kubeconfig is unusable."""


def open_kube_client(config: Config, timeout_seconds: float = REQUEST_TIMEOUT_SECONDS) -> "AsyncClient":
    try:
        import httpx2
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
    return AsyncClient(kube_config, timeout=httpx2.Timeout(timeout_seconds), field_manager=FIELD_MANAGER,
                       trust_env=False)
