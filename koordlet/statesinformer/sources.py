"""Which pod sources the states informer waits for: the one place that reads the config
(and the host's sockets) for it.

`synced()` means every expected source has delivered one complete listing:
- NRI when the runtime hooks run the NRI plugin and either the mode requires NRI
  (`nri`, `both`) or, in `auto`, the NRI socket exists at start;
- CRI when NRI is not waited for, an endpoint is configured and, for a unix socket,
  the socket exists at start (an absent socket means no CRI is coming, not "CRI
  listed no pods"). Where NRI is waited for, its Synchronize lists every sandbox and
  container CRI would: CRI is then the fallback polled only while NRI is away
  (`cri_polls_only_without_nri`), and readiness does not wait for it;
- kubelet when its pods URL is configured.
A source that is not expected may still deliver; it just is not waited for.
"""

from __future__ import annotations

import os
from typing import Callable

from koordlet.config import Config
from koordlet.statesinformer.model import Source
from koordlet.statesinformer.options import StatesOptions

PathExists = Callable[[str], bool]


def unix_socket_path(endpoint: str) -> str | None:
    """The filesystem path of a unix endpoint ("unix:///x", "unix:/x", "/x"), else None."""
    for prefix in ("unix://", "unix:"):
        if endpoint.startswith(prefix):
            return endpoint[len(prefix):]
    return endpoint if endpoint.startswith("/") else None


def nri_enabled(config: Config) -> bool:
    """Whether the NRI plugin runs at all."""
    return (config.runtime.enable_nri_runtime_hook and config.common.feature_gates.enabled("NRIRuntimeHooks")
            and config.runtime.runtime_hooks_mode != "bypass")


def nri_wanted(config: Config, exists: PathExists = os.path.exists) -> bool:
    """Whether readiness waits for NRI (connected and synchronized)."""
    if not nri_enabled(config):
        return False
    return config.runtime.runtime_hooks_mode != "auto" or exists(str(config.runtime.nri_socket_path))


def cri_polls_only_without_nri(config: Config) -> bool:
    """Whether the CRI poll stands down while NRI is connected and synchronized: whenever the
    plugin runs (NRI then delivers every sandbox and container, with events in between)."""
    return nri_enabled(config)


def cri_wanted(config: Config, exists: PathExists = os.path.exists) -> bool:
    """Whether readiness waits for a CRI listing."""
    if not config.runtime.cri_endpoint or nri_wanted(config, exists):
        return False
    path = unix_socket_path(config.runtime.cri_endpoint)
    return path is None or exists(path)


def expected_sources(config: Config, exists: PathExists = os.path.exists) -> frozenset[Source]:
    """The sources `PodStore.synced()` waits for under `config` on this host."""
    wanted = {Source.NRI: nri_wanted(config, exists), Source.CRI: cri_wanted(config, exists),
              Source.KUBELET: bool(config[StatesOptions].kubelet_pods_url)}
    return frozenset(source for source, yes in wanted.items() if yes)
