"""The states informer as a daemon module: owns the PodStore, polls CRI and kubelet.

The NRI plugin (runtime hooks) feeds the same store through `hubs.states`; this
module adds the bypass sources. A source that cannot be reached is logged once,
retried every interval, and logged again when it comes back; it never stops the
daemon. Ready when the store is synced: a first listing from every source that is
expected to deliver (`koordlet.statesinformer.sources.expected_sources`: NRI when the
hooks require it, CRI when its socket exists at start, kubelet when configured). A
CRI socket that is absent is not an empty listing: nothing is waited for from it,
and it is still polled in case a runtime comes later.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import structlog
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from koordlet.config import Config
from koordlet.statesinformer.kubelet_client import KubeletClient, KubeletError
from koordlet.statesinformer.model import Source
from koordlet.statesinformer.options import StatesOptions
from koordlet.statesinformer.store import PodStore
from koordlet.util.periodic import Periodic

if TYPE_CHECKING:
    from koordlet.statesinformer.cri_client import CriClient
    from koordlet.statesinformer.cri_poll import CriPoller

log = structlog.get_logger(__name__)


class _Outage:
    """Log a source's failure once, and its recovery once."""

    def __init__(self, source: str, where: str) -> None:
        self._source = source
        self._where = where
        self.down = False

    def failed(self, error: Exception) -> None:
        if not self.down:
            log.warning("states_source_unreachable", source=self._source, endpoint=self._where, error=str(error))
        self.down = True

    def succeeded(self) -> None:
        if self.down:
            log.info("states_source_reachable", source=self._source, endpoint=self._where)
        self.down = False


class StoreCollector(Collector):
    """koordlet_states_informer_objects{kind,source}: what each source knows and what readers see."""

    def __init__(self, store: PodStore) -> None:
        self._store = store

    def collect(self):
        family = GaugeMetricFamily("koordlet_states_informer_objects",
                                   "pods and containers the states informer knows, by source (merged: what agents see)",
                                   labels=["kind", "source"])
        for (kind, source), count in sorted(self._store.counts().items()):
            family.add_metric([kind, source], count)
        yield family


# koordlet's buckets: 1 ms x4 up to ~4 s (/pods answers within ~16 ms)
KUBELET_REQUEST_BUCKETS = tuple(0.001 * 4 ** n for n in range(7))


def _kubelet_client(options: StatesOptions, registry: CollectorRegistry | None) -> KubeletClient | None:
    if not options.kubelet_pods_url:
        return None
    if registry is None:
        return KubeletClient(options.kubelet_pods_url, options.states_kubelet_sync_timeout, options.kubelet_auth())
    seconds = Histogram("koordlet_kubelet_request_duration_seconds", "kubelet http request duration in seconds",
                        ["verb", "path", "code"], buckets=KUBELET_REQUEST_BUCKETS, registry=registry)
    return KubeletClient(options.kubelet_pods_url, options.states_kubelet_sync_timeout, options.kubelet_auth(),
                         observe=lambda path, code, took: seconds.labels("get", path, code).observe(took))


class StatesInformerModule:
    name = "statesinformer"

    def __init__(
        self,
        store: PodStore,
        config: Config,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.store = store
        self._config = config
        self._loops: list[Periodic] = []
        self._cri: CriClient | None = None  # a grpc.aio channel needs the running loop: made in start()
        self._kubelet = _kubelet_client(config[StatesOptions], registry)
        self._registry = registry
        if registry is not None:
            registry.register(StoreCollector(store))

    async def start(self) -> None:
        if self._config.runtime.cri_endpoint:
            from koordlet.statesinformer.cri_client import CriClient
            self._cri = CriClient(self._config.runtime.cri_endpoint)
        if self._cri is not None:
            from koordlet.statesinformer.cri_poll import CriPoller
            poller = CriPoller(self._cri, self.store, problem_log=self.store.problems)
            outage = _Outage("cri", self._cri.endpoint)
            self._loops.append(Periodic("states-cri", partial(self._poll_cri, poller, outage),
                                        self._config[StatesOptions].states_cri_sync_interval,
                                        event="states_poll_failed", registry=self._registry))
        if self._kubelet is not None:
            kubelet, outage = self._kubelet, _Outage("kubelet", self._kubelet.url)
            self._loops.append(Periodic("states-kubelet", partial(self._poll_kubelet, kubelet, outage),
                                        self._config[StatesOptions].states_kubelet_sync_interval,
                                        event="states_poll_failed", registry=self._registry))
        for loop in self._loops:
            loop.start()

    async def stop(self) -> None:
        for loop in self._loops:
            await loop.stop()
        self._loops.clear()
        if self._cri is not None:
            await self._cri.close()
            self._cri = None

    def ready(self) -> bool:
        """Synced, and every source's loop alive."""
        return self.store.synced() and all(loop.alive() for loop in self._loops)

    async def _poll_cri(self, poller: CriPoller, outage: _Outage) -> None:
        assert self._cri is not None
        from koordlet.statesinformer.cri_client import CriError
        try:
            if not self.store.source_synced(Source.CRI):
                version = await self._cri.version()
                log.info("cri_runtime", endpoint=self._cri.endpoint, runtime=version.runtime_name,
                         version=version.runtime_version, api=version.runtime_api_version)
            await poller.poll_once()
        except CriError as exc:
            outage.failed(exc)
            return
        outage.succeeded()

    async def _poll_kubelet(self, kubelet: KubeletClient, outage: _Outage) -> None:
        try:
            pods = await kubelet.pods()
        except KubeletError as exc:
            outage.failed(exc)
            return
        outage.succeeded()
        self.store.kubelet_listed(pods)
