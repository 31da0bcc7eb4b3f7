"""/proc/net/dev and link speed: parser on kernel text, fake sysfs, and the real host."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from system.errors import InvalidValue, NotSupported
from system.host import Host
from system.netdev import (
    NetDevCounters,
    counters_delta,
    parse_link_speed,
    parse_net_dev,
    read_link_speed,
    read_net_dev,
)
from tests.system.fake_trees import write_file

# captured on a Debian 12 VM (kernel 6.x); eth0 with counters wide enough to touch the ':'
PROC_NET_DEV = """\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:   60845     753    0    0    0     0          0         0    60845     753    0    0    0     0       0          0
  ifb0:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  eth0:49623109123    1386    3    4    0     0          0         0    95533     798    5    6    0     0       0          0
"""

HEADER = "\n".join(PROC_NET_DEV.splitlines()[:2]) + "\n"


def test_parses_each_device_with_rx_and_tx_columns():
    devices = parse_net_dev(PROC_NET_DEV)
    assert list(devices) == ["lo", "ifb0", "eth0"]
    assert devices["lo"] == NetDevCounters(60845, 753, 0, 0, 60845, 753, 0, 0)
    assert devices["eth0"] == NetDevCounters(49623109123, 1386, 3, 4, 95533, 798, 5, 6)


def test_header_only_means_no_devices():
    assert parse_net_dev(HEADER) == {}


@pytest.mark.parametrize("line", [
    "  eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n",  # 15 fields
    "  eth0: 1 2 x 4 5 6 7 8 9 10 11 12 13 14 15 16\n",
])
def test_malformed_device_line_is_invalid(line):
    with pytest.raises(InvalidValue):
        parse_net_dev(HEADER + line)


_names = st.from_regex(r"[a-z][a-z0-9._-]{0,14}", fullmatch=True)
_counter = st.integers(0, 2**64 - 1)


@given(st.dictionaries(_names, st.lists(_counter, min_size=16, max_size=16), max_size=6))
def test_round_trip_through_kernel_layout(table):
    # the kernel's own format: "%6s:%8llu %7llu ..." (net/core/net-procfs.c)
    lines = [HEADER]
    for name, v in table.items():
        lines.append("%6s:%8d %7d %4d %4d %4d %5d %10d %9d %8d %7d %4d %4d %4d %5d %7d %10d\n"
                     % (name, *v))
    devices = parse_net_dev("".join(lines))
    assert set(devices) == set(table)
    for name, v in table.items():
        assert devices[name] == NetDevCounters(*v[0:4], *v[8:12])


def test_delta_counts_what_moved_and_restarts_after_a_reset():
    before = NetDevCounters(100, 10, 0, 0, 50, 5, 0, 0)
    after = NetDevCounters(160, 16, 1, 0, 80, 8, 0, 2)
    assert counters_delta(before, after) == NetDevCounters(60, 6, 1, 0, 30, 3, 0, 2)
    recreated = NetDevCounters(7, 1, 0, 0, 3, 1, 0, 0)
    assert counters_delta(after, recreated) == recreated


def test_link_speed_values():
    assert parse_link_speed("10000\n") == 10000
    assert parse_link_speed("-1\n") is None  # virtio reports an unknown speed
    with pytest.raises(InvalidValue):
        parse_link_speed("fast")


def test_link_speed_on_a_fake_sysfs(tmp_path):
    host = Host.under(tmp_path)
    write_file(host.sys("class", "net", "eth0", "speed"), "25000\n")
    write_file(host.sys("class", "net", "veth1", "speed"), "-1\n")
    host.sys("class", "net", "lo").mkdir(parents=True)  # no speed file at all
    assert read_link_speed(host, "eth0") == 25000
    assert read_link_speed(host, "veth1") is None
    assert read_link_speed(host, "lo") is None
    with pytest.raises(NotSupported):
        read_link_speed(host, "eth9")
    with pytest.raises(InvalidValue):
        read_link_speed(host, "../../etc")


def test_fake_proc_net_dev(tmp_path):
    host = Host.under(tmp_path)
    with pytest.raises(NotSupported):
        read_net_dev(host)
    write_file(host.proc("net", "dev"), PROC_NET_DEV)
    assert read_net_dev(host)["ifb0"].rx_bytes == 0


def test_real_loopback_counts_a_datagram():
    host = Host()
    before = read_net_dev(host)["lo"]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        rx.bind(("127.0.0.1", 0))
        tx.sendto(b"x" * 100, rx.getsockname())
        assert rx.recv(200) == b"x" * 100
    moved = counters_delta(before, read_net_dev(host)["lo"])
    assert moved.rx_packets >= 1 and moved.tx_packets >= 1
    assert moved.rx_bytes >= 100 + 28  # payload + IPv4 and UDP headers
    # loopback has no speed: the kernel answers EINVAL, which reads as "unknown"
    assert read_link_speed(host, "lo") is None
