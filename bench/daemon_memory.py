"""Where the daemon's memory is at N pods: tracemalloc inside the real daemon process.

    python -m bench.daemon_memory [--pods 1000] [--warmup 40] [--window 30] [--top 25] [--frames 1]

Runs bench.daemon_scale's measurement once (same daemon, same test runtime, same real
cgroups; root) with the daemon started under ``python -X tracemalloc=1`` and a SIGUSR1
handler that dumps a snapshot; the snapshot is taken at the end of the quiet window (its
VmRSS printed with it). Prints the Python heap traced by package (koordlet/<module>,
third-party, stdlib), by file and by line; the floor is the process's VmRSS at the same
instant (the traced share of it). tracemalloc's own overhead is in the RSS, not in the
traced bytes. With --frames N > 1 a last table charges each allocation to the innermost
frame of the project's own code (not the stdlib's, a frozen module's or a package's), e.g.
the module that keeps a pathlib.Path rather than pathlib.py.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from bench import daemon_scale

SNAPSHOT_WAIT_SECONDS = 120.0


def traced_daemon(snapshot_path: str, argv: list[str]) -> int:
    """The daemon's own main, with a SIGUSR1 that dumps the tracemalloc snapshot."""
    from koordlet.__main__ import main

    def dump(signum: int, frame: object) -> None:
        tracemalloc.take_snapshot().dump(snapshot_path + ".part")
        os.replace(snapshot_path + ".part", snapshot_path)

    signal.signal(signal.SIGUSR1, dump)
    return main(argv)


def owner(filename: str) -> str:
    """koordlet/<module>, nri/proto (ours), a third-party package, or the stdlib."""
    parts = Path(filename).parts
    if "site-packages" in parts:
        return "site-packages/" + parts[parts.index("site-packages") + 1]
    for ours in ("koordlet", "nri", "proto", "bench"):
        if ours in parts:
            at = len(parts) - 1 - parts[::-1].index(ours)
            return "/".join(parts[at:at + 2]) if ours == "koordlet" and at + 2 < len(parts) else ours
    return "stdlib/" + parts[-1] if filename.startswith(sys.base_prefix) else filename


def ours(filename: str) -> bool:
    return not (filename.startswith("<") or "site-packages" in filename or filename.startswith(sys.base_prefix))


def by_own_frame(snapshot: tracemalloc.Snapshot, pods: int, top: int) -> None:
    sizes: dict[str, list[int]] = {}
    for trace in snapshot.traces:
        # a Traceback runs from the oldest frame kept to the most recent
        frame = next((f for f in reversed(trace.traceback) if ours(f.filename)), trace.traceback[-1])
        entry = sizes.setdefault("%s:%d" % (short(frame.filename), frame.lineno), [0, 0])
        entry[0] += trace.size
        entry[1] += 1
    print("by the innermost frame of our own code:")
    for where, (size, count) in sorted(sizes.items(), key=lambda item: -item[1][0])[:top]:
        print("  %-60s %8.2f MiB  %8d blocks  %6.0f B/pod" % (where, size / 2**20, count, size / max(pods, 1)))


def report(snapshot: tracemalloc.Snapshot, rss_kib: int, pods: int, top: int) -> None:
    stats = snapshot.statistics("filename")
    traced = sum(s.size for s in stats)
    print("traced %.1f MiB of VmRSS %.1f MiB (%.0f %%) at %d pods; %.0f B traced per pod"
          % (traced / 2**20, rss_kib / 1024, 100 * traced / (rss_kib * 1024), pods, traced / max(pods, 1)))
    by_owner: dict[str, int] = {}
    for stat in stats:
        name = owner(stat.traceback[0].filename)
        by_owner[name] = by_owner.get(name, 0) + stat.size
    print("by package:")
    for name, size in sorted(by_owner.items(), key=lambda item: -item[1])[:top]:
        print("  %-44s %8.2f MiB  %7.0f B/pod" % (name, size / 2**20, size / max(pods, 1)))
    print("by line:")
    for stat in snapshot.statistics("lineno")[:top]:
        frame = stat.traceback[0]
        print("  %-60s %8.2f MiB  %8d blocks" % ("%s:%d" % (short(frame.filename), frame.lineno),
                                                 stat.size / 2**20, stat.count))


def short(filename: str) -> str:
    parts = Path(filename).parts
    for anchor in ("site-packages", "koordlet", "nri", "proto"):
        if anchor in parts:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(anchor):])
    return "/".join(parts[-2:])


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--traced-daemon":
        sys.exit(traced_daemon(sys.argv[2], sys.argv[4:]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--warmup", type=float, default=40.0)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--frames", type=int, default=1, help="frames kept per allocation (slower when > 1)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("daemon_memory: needs root (real cgroups)")
    snapshot_path = os.path.join(tempfile.mkdtemp(prefix="koordlet-memory-"), "daemon.tracemalloc")
    plain_command = daemon_scale.daemon_command
    plain_sample = daemon_scale.proc_sample
    taken: list[int] = []

    def traced_command(*command_args: Path | int) -> list[str]:
        command = plain_command(*command_args)  # type: ignore[arg-type]
        head = 3 if command[1:3] == ["-m", "koordlet"] else 1
        return [sys.executable, "-X", "tracemalloc=%d" % args.frames, "-m", "bench.daemon_memory", "--traced-daemon",
                snapshot_path, "--", *command[head:]]

    def sample_and_snapshot(pid: int) -> daemon_scale.ProcSample:
        sample = plain_sample(pid)
        taken.append(sample.rss_kib)
        if len(taken) == 2:  # the end of the quiet window
            os.kill(pid, signal.SIGUSR1)
            deadline = time.monotonic() + SNAPSHOT_WAIT_SECONDS
            while not os.path.exists(snapshot_path) and time.monotonic() < deadline:
                time.sleep(0.2)
        return sample

    daemon_scale.daemon_command = traced_command  # type: ignore[assignment]
    daemon_scale.proc_sample = sample_and_snapshot
    daemon_scale.configure_logging("warning", "json")
    run_args = daemon_scale.parse_args(["--warmup", str(args.warmup), "--window", str(args.window),
                                        "--creates", "20", "--scrapes", "1"])
    print("daemon_memory: the daemon_scale daemon at %d pods x 2 containers under tracemalloc (%d frames); snapshot "
          "at the end of a %.0f s quiet window after %.0f s of warm-up" % (args.pods, args.frames, args.window,
                                                                           args.warmup),
          flush=True)
    result = daemon_scale.run_one(run_args, args.pods)
    print("daemon_scale figures of this (traced) run: rss_start_mib %.1f rss_end_mib %.1f hwm_mib %.1f"
          % (result["rss_start_mib"], result["rss_end_mib"], result["hwm_mib"]))
    if not os.path.exists(snapshot_path):
        sys.exit("daemon_memory: no snapshot from the daemon")
    snapshot = tracemalloc.Snapshot.load(snapshot_path)
    report(snapshot, taken[1], args.pods, args.top)
    if args.frames > 1:
        by_own_frame(snapshot, args.pods, args.top)
    os.remove(snapshot_path)
    os.rmdir(os.path.dirname(snapshot_path))


if __name__ == "__main__":
    main()
