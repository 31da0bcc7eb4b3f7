"""Run the whole suite several times with CPU-bound loops alongside (`make stress-test`).

CI shares its machine: a suite that passes only on an idle one is a red CI. This starts
`--loops` busy processes (each spinning on one CPU), runs pytest `--runs` times, and always
kills the loops; it prints each run's result and wall time and fails if any run failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPIN = "while True: pass"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--loops", type=int, default=4)
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    args = parser.parse_args(argv)
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.loops)]
    failed = 0
    try:
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.pytest_args],
                                    cwd=ROOT, capture_output=True, text=True)
            summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
            print("run %d/%d: %s in %.0f s, load %.1f (%d busy loops on %d CPUs): %s"
                  % (run, args.runs, "passed" if result.returncode == 0 else "FAILED", time.monotonic() - started,
                     os.getloadavg()[0], args.loops, os.cpu_count() or 0, summary), flush=True)
            if result.returncode != 0:
                failed += 1
                print("\n".join(line for line in result.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))))
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()
    print("stress: %d of %d runs passed" % (args.runs - failed, args.runs))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
