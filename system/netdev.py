"""Per-interface network counters from ``/proc/net/dev`` and link speed from sysfs.

Format (net/core/net-procfs.c): two header lines, then one line per device,
``<name>:`` followed by 8 receive fields (bytes packets errs drop fifo frame compressed
multicast) and 8 transmit fields (bytes packets errs drop fifo colls carrier compressed).
A device name never holds ':' (dev_valid_name), so the first ':' ends it even when a large
counter leaves no space after it.

The counters are those of the network namespace of the reading process: a daemon on the
host network sees the node's devices. Why not pyroute2 (netlink RTM_GETLINK, IFLA_STATS64),
which gives the same counters: measured here (bench/netdev.py) one netlink dump costs ~35x
a read + parse of this file, and importing pyroute2 adds ~23 MiB of RSS to the daemon.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType

from system.errors import InvalidValue, NotSupported, classify_os_error
from system.host import Host

_RX_FIELDS = 8
_TX_FIELDS = 8


@dataclass(frozen=True, slots=True)
class NetDevCounters:
    """Cumulative counters of one interface since it was created."""

    rx_bytes: int
    rx_packets: int
    rx_errors: int
    rx_dropped: int
    tx_bytes: int
    tx_packets: int
    tx_errors: int
    tx_dropped: int


_COUNTER_NAMES = tuple(f.name for f in fields(NetDevCounters))


def parse_net_dev(text: str) -> Mapping[str, NetDevCounters]:
    """Interface name -> counters; InvalidValue for a malformed device line."""
    devices: dict[str, NetDevCounters] = {}
    for line in text.splitlines():
        name, colon, rest = line.partition(":")
        if not colon or "|" in line:  # the two header lines hold '|' (and a ':' never)
            continue
        words = rest.split()
        if len(words) < _RX_FIELDS + _TX_FIELDS:
            raise InvalidValue("short /proc/net/dev line %r" % line)
        try:
            rx = [int(word) for word in words[:4]]
            tx = [int(word) for word in words[_RX_FIELDS:_RX_FIELDS + 4]]
        except ValueError:
            raise InvalidValue("bad /proc/net/dev line %r" % line) from None
        devices[name.strip()] = NetDevCounters(*rx, *tx)
    return MappingProxyType(devices)


def counters_delta(before: NetDevCounters, after: NetDevCounters) -> NetDevCounters:
    """What moved between two samples. A counter that went back (the device was re-created
    under the same name, or a 32-bit driver counter wrapped) counts from zero instead."""
    moved = []
    for name in _COUNTER_NAMES:
        old, new = getattr(before, name), getattr(after, name)
        moved.append(new - old if new >= old else new)
    return NetDevCounters(*moved)


def parse_link_speed(text: str) -> int | None:
    """sysfs ``speed`` in Mbit/s; None when unknown (-1: virtio and friends, or 0)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise InvalidValue("bad link speed %r" % text) from None
    return value if value > 0 else None


# ------------------------------------------------------------------ IO shells

def read_net_dev(host: Host) -> Mapping[str, NetDevCounters]:
    path = host.proc("net", "dev")
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError as exc:
        raise classify_os_error(exc, path) from None
    return parse_net_dev(text)


def read_link_speed(host: Host, interface: str) -> int | None:
    """Link speed in Mbit/s, None when the device does not report one.

    The kernel answers EINVAL for devices without a speed (loopback, ifb, a link that is
    down); NotSupported when the interface does not exist.
    """
    if not interface or "/" in interface or interface in (".", ".."):
        raise InvalidValue("bad interface name %r" % interface)
    directory = host.sys("class", "net", interface)
    path = directory / "speed"
    try:
        text = Path(path).read_text()
    except OSError:
        if directory.is_dir():
            return None  # EINVAL from the driver, or no speed file for this device type
        raise NotSupported("no such interface", directory) from None
    return parse_link_speed(text)


def has_device(host: Host, interface: str) -> bool:
    """True for interfaces backed by a device (a NIC, virtio included); False for software
    interfaces: loopback, veth pairs of pods, bridges, tunnels, ifb. Per-pod veths would
    otherwise add six series per pod to the node's network figures."""
    if not interface or "/" in interface or interface in (".", ".."):
        return False
    return host.sys("class", "net", interface, "device").exists()
