"""The states informer as a daemon module: owns the PodStore, polls CRI and kubelet.

The NRI plugin (runtime hooks) feeds the same store through `hubs.states`; this
module adds the bypass sources. A source that cannot be reached is logged once,
retried every interval, and logged again when it comes back; it never stops the
daemon. Ready when the store is synced: a first listing from every source that is
expected to deliver (`koordlet.statesinformer.sources.expected_sources`: NRI when the
hooks require it, else CRI when its socket exists at start; kubelet when configured). A
CRI socket that is absent is not an empty listing: nothing is waited for from it,
and it is still polled in case a runtime comes later.

CRI while NRI is not there: where the NRI plugin runs, the CRI poll stands down while
NRI is connected and synchronized (`PodStore.nri_live`): NRI's Synchronize and events
deliver every sandbox and container the poll would. The poll runs again at once when NRI
drops (containerd restarting) and every interval until NRI is back. Where NRI is waited
for, the first poll waits one interval for it; so a node NRI serves never imports grpc.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import structlog

from koordlet.config import Config
from koordlet.metrics.client import Collector, CollectorRegistry, GaugeMetricFamily, Histogram
from koordlet.statesinformer.kubelet_client import KubeletClient, KubeletError
from koordlet.statesinformer.model import Source
from koordlet.statesinformer.options import StatesOptions
from koordlet.statesinformer.sources import cri_polls_only_without_nri, nri_wanted
from koordlet.statesinformer.store import PodStore
from koordlet.util.periodic import FirstRun, Periodic

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
        # made at the first poll (a grpc.aio channel needs the running loop; grpc costs ~11 MiB
        # imported) and dropped while NRI is live
        self._cri: CriClient | None = None
        self._cri_poller: CriPoller | None = None
        self._cri_loop: Periodic | None = None
        self._cri_outage = _Outage("cri", "")
        self._cri_only_without_nri = cri_polls_only_without_nri(config)
        self._kubelet = _kubelet_client(config[StatesOptions], registry)
        self._registry = registry
        if registry is not None:
            registry.register(StoreCollector(store))

    async def start(self) -> None:
        endpoint = self._config.runtime.cri_endpoint
        if endpoint:
            self._cri_outage = _Outage("cri", endpoint)
            # NRI, where it is waited for, lists every pod within a second or so of start: the
            # first CRI poll waits one interval for it, so a node NRI serves never loads grpc
            first = FirstRun.AFTER_INTERVAL if self._cri_only_without_nri and nri_wanted(self._config) else FirstRun.NOW
            self._cri_loop = Periodic("states-cri", self.cri_round, self._config[StatesOptions].states_cri_sync_interval,
                                      first_run=first, event="states_poll_failed", registry=self._registry)
            self._loops.append(self._cri_loop)
            if self._cri_only_without_nri:
                self.store.on_nri_link(self._nri_link_changed)
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
        await self._close_cri()

    def ready(self) -> bool:
        """Synced, and every source's loop alive."""
        return self.store.synced() and all(loop.alive() for loop in self._loops)

    async def cri_round(self) -> None:
        """One round of the CRI loop: a poll, or, while NRI is live where it stands in for
        CRI, nothing (the first such round drops CRI's listing and its connection)."""
        if self._cri_only_without_nri and self.store.nri_live():
            if self._cri_poller is not None:
                log.info("cri_poll_stands_down", reason="nri_synchronized")
                self.store.cri_stand_down()
                await self._close_cri()
            return
        if self._cri_poller is None:
            from koordlet.statesinformer.cri_client import CriClient
            from koordlet.statesinformer.cri_poll import CriPoller
            self._cri = CriClient(self._config.runtime.cri_endpoint)
            self._cri_poller = CriPoller(self._cri, self.store, problem_log=self.store.problems)
            if self.store.source_synced(Source.CRI) or self.store.source_synced(Source.NRI):
                log.info("cri_poll_resumes", reason="nri_not_synchronized")
        await self._poll_cri(self._cri_poller, self._cri_outage)

    def _nri_link_changed(self, up: bool) -> None:
        """NRI lost (poll CRI now) or back (stand down at once)."""
        if self._cri_loop is not None:
            self._cri_loop.wake()

    async def _close_cri(self) -> None:
        self._cri_poller = None
        if self._cri is not None:
            cri, self._cri = self._cri, None
            await cri.close()

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
