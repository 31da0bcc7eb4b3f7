"""How long writing the report file (--report-output-file) holds the event loop.

    python -m bench.report_file [--pods 1000,3000] [--runs 20]

The file is encoded and written in a worker thread. A document of the shape the reporter
writes (NodeMetric status with one entry per pod: bench.nodemetric_build's floor document) is
written --runs times while the loop runs a ticker that records the longest
gap between two of its turns: the longest the loop could not run. Two ways:
- one-shot: json.dumps of the whole document in the thread, the interpreter's default switch
  interval (what the daemon did before util/json_text.py);
- daemon: the text encoded in pieces (util/json_text.py) and written
  (standalone.write_report_file), both under util.switch_interval.render_in_worker (interval
  lowered). The reporter itself now writes the NodeMetric's text from its snapshot, on the
  loop in steps (nodemetric.node_metric_text_steps), and only the write is in a worker.
Floors, same run: json.dumps of the same document, CPU time (what any encoder of that text
costs at least; the pieces' CPU is printed beside it with the ratio); and the longest gap
while a worker under render_in_worker only spins in Python for as long as the one-shot
encoding takes: the GIL's and the OS's share of any gap on this host, whatever the work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

from bench.daemon_scale import pct
from bench.nodemetric_build import floor_document, make_pods
from koordlet.reporter.standalone import write_report_file
from koordlet.util.durable import write_atomically
from koordlet.util.json_text import canonical_json
from koordlet.util.switch_interval import render_in_worker


def document(pods: int) -> dict[str, Any]:
    """The file's document with a NodeMetric status of `pods` pods (bench.nodemetric_build's
    same-shape status from ready-made strings)."""
    status = floor_document(make_pods(pods))
    return {"nodeMetric": {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "status": status},
            "customNodeResource": None, "batchResources": None}


def daemon_write(path: Path, value: dict[str, Any]) -> None:
    write_report_file(path, canonical_json(value).encode())


def one_shot(path: Path, value: dict[str, Any]) -> None:
    write_atomically(path, json.dumps(value, separators=(",", ":"), sort_keys=True).encode() + b"\n", mode=0o644)


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def longest_gaps(start: Callable[[], Awaitable[object]], runs: int) -> list[float]:
    gaps: list[float] = []
    for _ in range(runs):
        done = asyncio.ensure_future(start())
        last, longest = time.perf_counter(), 0.0
        while not done.done():
            await asyncio.sleep(0)
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
        await done
        gaps.append(longest * 1e3)
    return gaps


def cpu_ms(encode: Callable[[Any], str], value: dict[str, Any], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.process_time()
        encode(value)
        samples.append((time.process_time() - start) * 1e3)
    return pct(samples, 0.5)


def measure(pods: int, path: Path, runs: int) -> dict[str, float]:
    value = document(pods)
    floor = cpu_ms(lambda v: json.dumps(v, separators=(",", ":"), sort_keys=True), value, runs)
    pieces = cpu_ms(canonical_json, value, runs)
    old = asyncio.run(longest_gaps(lambda: asyncio.to_thread(one_shot, path, value), runs))
    new = asyncio.run(longest_gaps(lambda: render_in_worker(daemon_write, path, value), runs))
    spun = asyncio.run(longest_gaps(lambda: render_in_worker(spin, floor / 1e3), runs))
    return {"pods": pods, "bytes": len(canonical_json(value)), "floor_cpu_ms": floor, "pieces_cpu_ms": pieces,
            "ratio": pieces / floor, "one_shot_gap_ms_p50": pct(old, 0.5), "one_shot_gap_ms_max": max(old),
            "daemon_gap_ms_p50": pct(new, 0.5), "daemon_gap_ms_max": max(new),
            "floor_gap_ms_p50": pct(spun, 0.5), "floor_gap_ms_max": max(spun),
            "gap_ratio_p50": pct(new, 0.5) / pct(spun, 0.5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", default="1000,3000")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print("%6s %9s | %12s %18s | %15s %15s %15s %6s  (longest gap of a write, p50 / max over runs, ms)" % (
        "pods", "bytes", "floor CPU ms", "pieces CPU ms", "one-shot gap", "daemon gap", "floor gap", "ratio"))
    with tempfile.TemporaryDirectory(prefix="bench-report-file-") as tmp:
        for pods in (int(n) for n in args.pods.split(",")):
            row = measure(pods, Path(tmp) / "reports.json", args.runs)
            print("%6d %9d | %12.2f %12.2f %.2fx | %6.2f / %6.2f %6.2f / %6.2f %6.2f / %6.2f %5.2fx" % (
                pods, row["bytes"], row["floor_cpu_ms"], row["pieces_cpu_ms"], row["ratio"],
                row["one_shot_gap_ms_p50"], row["one_shot_gap_ms_max"], row["daemon_gap_ms_p50"],
                row["daemon_gap_ms_max"], row["floor_gap_ms_p50"], row["floor_gap_ms_max"], row["gap_ratio_p50"]))
            print(json.dumps(row))


if __name__ == "__main__":
    main()
