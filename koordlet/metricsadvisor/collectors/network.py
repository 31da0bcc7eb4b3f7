"""Node network throughput per device-backed interface: bytes, packets and errors per
second, received and transmitted, from /proc/net/dev (system/netdev.py explains the choice
over pyroute2: same counters, ~35x cheaper per read, no 23 MiB import). Every 1 s with the
usage collectors; interfaces without a device (pods' veths, bridges, lo) are left out so
the series do not grow with the pod count."""

from __future__ import annotations

from koordlet.metriccache.api import Metric, SeriesKey
from koordlet.metricsadvisor.framework import CollectContext, CollectorUnsupported, PeriodicCollector
from koordlet.metricsadvisor.rates import per_second
from system.errors import SystemFileError
from system.host import Host
from system.netdev import NetDevCounters, has_device, read_net_dev

# (metric, direction, counter field)
_RATES = (
    (Metric.NODE_NETWORK_BYTES_PER_SECOND, "rx", "rx_bytes"),
    (Metric.NODE_NETWORK_BYTES_PER_SECOND, "tx", "tx_bytes"),
    (Metric.NODE_NETWORK_PACKETS_PER_SECOND, "rx", "rx_packets"),
    (Metric.NODE_NETWORK_PACKETS_PER_SECOND, "tx", "tx_packets"),
    (Metric.NODE_NETWORK_ERRORS_PER_SECOND, "rx", "rx_errors"),
    (Metric.NODE_NETWORK_ERRORS_PER_SECOND, "tx", "tx_errors"),
)


class NetworkCollector(PeriodicCollector):
    name = "network"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self._host: Host | None = None
        self._last: dict[str, tuple[float, NetDevCounters, tuple[SeriesKey, ...]]] = {}
        self._devices: dict[str, bool] = {}  # interface -> device-backed, looked up once

    def setup(self, ctx: CollectContext) -> None:
        self._host = ctx.host
        try:
            read_net_dev(ctx.host)
        except SystemFileError as exc:
            raise CollectorUnsupported("no /proc/net/dev: %s" % exc) from exc

    def collect(self, now: float) -> list[tuple[SeriesKey, float]]:
        assert self._host is not None
        out: list[tuple[SeriesKey, float]] = []
        previous, current = self._last, {}
        known = {}
        for interface, counters in read_net_dev(self._host).items():
            device = self._devices.get(interface)
            if device is None:
                device = has_device(self._host, interface)
            known[interface] = device
            if not device:
                continue
            last = previous.get(interface)
            keys = last[2] if last is not None else tuple(
                SeriesKey.of(metric, interface=interface, direction=direction) for metric, direction, _ in _RATES)
            current[interface] = (now, counters, keys)
            if last is None:
                continue
            for key, (_, _, field) in zip(keys, _RATES):
                rate = per_second(last[0], getattr(last[1], field), now, getattr(counters, field))
                if rate is not None:
                    out.append((key, rate))
        self._last, self._devices = current, known
        return out
