"""gzip of a /metrics body as the HTTP endpoint packs it (http_endpoint.gzip_parts: level
HTTP_GZIP_LEVEL, the gzip wrapper, part after part): the stdlib's zlib against isal's (the
`fast` extra), on the metrics advisor's exposition at N pods x 2 containers
(bench.metrics_scrape's pods and cache, default series, PSI for the node and every pod).
Prometheus asks for gzip at every scrape.

    .venv/bin/python -m bench.metrics_gzip [--pods 100,1000,3000] [--repeats 15]

Per N: the body's size, then for each packer the thread CPU ms of one body (p50 of
--repeats, the packers alternating) and the packed size. Floor, same run: zlib.crc32 over
the same parts (every byte read once, which any gzip writer does at least).
"""

from __future__ import annotations

import argparse
import statistics
import zlib
from types import ModuleType

from bench.metrics_scrape import NOW, fake_pods, filled_store, psi_snapshots, timed_ms
from koordlet.metricsadvisor.exporter import AdvisorExporter
from koordlet.server.http_endpoint import gzip_module, gzip_parts
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo


def packers() -> list[tuple[str, ModuleType]]:
    """zlib, and the endpoint's own packer when it is another (isal's)."""
    found = [("zlib", zlib)]
    module = gzip_module()
    if module is zlib:
        print("metrics_gzip: isal is not installed (pip install '.[fast]'): zlib only")
    else:
        found.append(("isal", module))
    return found


def body_parts(n: int) -> tuple[bytes, ...]:
    pods = fake_pods(n)
    store, rounds = filled_store(pods), psi_snapshots(pods, True, 1.0)
    exporter = AdvisorExporter(store, StaticStates(NodeInfo("bench-node"), pods), "bench-node",
                               clock=lambda: NOW + 1, psi=lambda: rounds[0])
    return tuple(exporter.render_parts(False, True, True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", default="100,1000,3000", help="comma-separated N")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    found = packers()
    print("| N pods | body KiB | " + " | ".join("%s CPU ms | %s KiB | x floor" % (name, name) for name, _ in found)
          + " | floor (crc32) ms |")
    print("|---:|---:|" + "---:|---:|---:|" * len(found) + "---:|")
    for n in (int(x) for x in args.pods.split(",")):
        print("| " + " | ".join(row(n, found, args.repeats)) + " |", flush=True)


def row(n: int, found: list[tuple[str, ModuleType]], repeats: int) -> list[str]:
    parts = body_parts(n)
    packed = {name: gzip_parts(parts, module) for name, module in found}
    assert all(zlib.decompress(body, 47) == b"".join(parts) for body in packed.values())

    def floor() -> int:
        crc = 0
        for part in parts:
            crc = zlib.crc32(part, crc)
        return crc

    calls = tuple((lambda module=module: gzip_parts(parts, module)) for _, module in found) + (floor,)
    cpus = [statistics.median(cpu) for _, cpu, _ in timed_ms(calls, repeats)]
    cells = ["{:,}".format(n), "{:,.0f}".format(sum(map(len, parts)) / 1024)]
    for (name, _), cpu in zip(found, cpus):
        cells += ["%.2f" % cpu, "{:,.0f}".format(len(packed[name]) / 1024), "%.1f" % (cpu / cpus[-1])]
    return cells + ["%.2f" % cpus[-1]]


if __name__ == "__main__":
    main()
