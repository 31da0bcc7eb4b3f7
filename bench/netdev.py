"""Benchmark per-interface network counters: /proc/net/dev vs psutil vs pyroute2 netlink.

    .venv/bin/python -m bench.netdev [--n 5000]

Floor: raw os.open + os.read + os.close of /proc/net/dev (no parsing). Every reader
returns rx/tx bytes/packets/errors/drops for every interface. Also prints the RSS an
import of each library adds to a fresh interpreter (that is paid whether or not it is used).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from bench.system_readers import measure
from system.host import Host
from system.netdev import parse_net_dev, read_net_dev

# VmRSS, not ru_maxrss: the latter keeps the forking parent's peak across exec
_RSS_PROBE = (
    "%s\nprint([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmRSS')][0])"
)


def _raw_read() -> bytes:
    fd = os.open("/proc/net/dev", os.O_RDONLY)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _import_rss_kib(statement: str) -> int:
    out = subprocess.run([sys.executable, "-c", _RSS_PROBE % statement],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=5000)
    args = parser.parse_args()
    host = Host()
    text = _raw_read().decode()
    print("interfaces: %s  n=%d" % (", ".join(parse_net_dev(text)), args.n))
    print("%-40s %12s %9s %9s %8s" % ("reader", "reads/s", "p50 µs", "p99 µs", "×floor"))
    floor = measure(_raw_read, args.n)
    rows: list[tuple[str, tuple[float, float, float]]] = [
        ("floor: raw open+read+close", floor),
        ("parse_net_dev (text in memory)", measure(lambda: parse_net_dev(text), args.n)),
        ("system.netdev.read_net_dev", measure(lambda: read_net_dev(host), args.n)),
    ]
    try:
        import psutil

        rows.append(("psutil.net_io_counters(pernic=True)",
                     measure(lambda: psutil.net_io_counters(pernic=True), args.n)))
    except ImportError as exc:
        print("psutil unavailable: %s" % exc)
    try:
        from pyroute2 import IPRoute

        ipr = IPRoute()

        def netlink() -> dict[str, tuple[int, ...]]:
            out = {}
            for link in ipr.get_links():
                stats = link.get_attr("IFLA_STATS64")
                out[link.get_attr("IFLA_IFNAME")] = (
                    stats["rx_bytes"], stats["rx_packets"], stats["rx_errors"],
                    stats["rx_dropped"], stats["tx_bytes"], stats["tx_packets"],
                    stats["tx_errors"], stats["tx_dropped"],
                )
            return out

        rows.append(("pyroute2 IPRoute.get_links (kept socket)",
                     measure(netlink, max(200, args.n // 10))))
        ipr.close()
    except ImportError as exc:
        print("pyroute2 unavailable: %s" % exc)
    for name, (rate, p50, p99) in rows:
        print("%-40s %12.0f %9.2f %9.2f %8.1f" % (name, rate, p50, p99, p50 / floor[1]))
    base = _import_rss_kib("pass")
    print("import RSS over a bare interpreter (%d KiB):" % base)
    for module in ("system.netdev", "psutil", "pyroute2"):
        try:
            extra = _import_rss_kib("import %s" % module) - base
        except subprocess.CalledProcessError:
            print("  %-14s unavailable" % module)
            continue
        print("  %-14s +%6d KiB" % (module, extra))


if __name__ == "__main__":
    main()
