"""Mutation testing with mutmut, one module at a time (`make mutation`; not in CI).

    python -m tests.mutation [MODULE.py ...]

For each module, a scratch copy of the project is made under /tmp (mutmut writes its
`mutants/` tree and cache next to the configuration it reads, so the work tree is
never touched), mutmut mutates that module only and runs the tests that cover each
mutated function, and the killed / survived counts are printed per module. Mutants
that time out count as killed (a mutation that hangs a test is caught); mutants no
test covers are listed apart, as survivors.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# module -> the tests that judge it
TARGETS: dict[str, tuple[str, ...]] = {
    "system/cgroup_codecs.py": ("tests/system/test_cgroup_codecs.py", "tests/system/test_cgroup_resource.py", "tests/system/test_registry_on_trees.py",
                                "tests/system/test_cgroup_files.py", "tests/system/test_cpuset.py"),
    "system/cgroup_resource.py": ("tests/system/test_cgroup_codecs.py", "tests/system/test_cgroup_resource.py", "tests/system/test_registry_names.py",
                                  "tests/system/test_registry_on_trees.py", "tests/system/test_cgroup_files.py"),
    "resourceexecutor/levelled_order.py": ("tests/resourceexecutor",),
    "resourceexecutor/write_cache.py": ("tests/resourceexecutor",),
    "resourceexecutor/updater.py": ("tests/resourceexecutor",),
    "resourceexecutor/batch_run.py": ("tests/resourceexecutor",),
    "resourceexecutor/executor.py": ("tests/resourceexecutor",),
    "resourceexecutor/outcome.py": ("tests/resourceexecutor",),
    "nri/ttrpc/frame.py": ("tests/nri/test_ttrpc_frame.py", "tests/nri/test_ttrpc_single_frame_reads.py",
                           "tests/nri/test_golden_capture.py"),
    "nri/ttrpc/envelope.py": ("tests/nri/test_ttrpc_frame.py", "tests/nri/test_ttrpc_rpc.py",
                              "tests/nri/test_proto_vectors.py"),
    "nri/mux/frame.py": ("tests/nri/test_mux_frame.py", "tests/nri/test_mux_fuzz.py", "tests/nri/test_mux_trunk.py"),
}
COPIED = ("system", "resourceexecutor", "nri", "proto", "tests", "setup.py")
KILLED = {"killed", "timeout", "segfault", "suspicious"}


@dataclass(frozen=True, slots=True)
class Score:
    module: str
    killed: int
    survived: int
    no_tests: int
    other: int
    seconds: float

    @property
    def percent(self) -> float:
        judged = self.killed + self.survived + self.no_tests
        return 100.0 * self.killed / judged if judged else 0.0


def _scratch(module: str, tests: tuple[str, ...]) -> Path:
    work = Path(tempfile.mkdtemp(prefix="koordlet-mutation-"))
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, work / name, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        elif source.exists():
            shutil.copy2(source, work / name)
    selection = "\n".join("    " + path for path in tests)
    (work / "setup.cfg").write_text(
        "[mutmut]\nsource_paths =\n    system\n    resourceexecutor\n    nri\n"
        "only_mutate =\n    %s\n" % module
        + "pytest_add_cli_args_test_selection =\n%s\n" % selection
        + "pytest_add_cli_args =\n    -p\n    no:cacheprovider\n    -q\n"
        + "\n[tool:pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        + "markers =\n    kernel: real kernel\n    slow: slow\n"
    )
    return work


def _results(work: Path) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-m", "mutmut", "export-cicd-stats"], cwd=work,
                         capture_output=True, text=True)
    stats = work / "mutants" / "mutmut-cicd-stats.json"
    if out.returncode == 0 and stats.exists():
        return {"__stats__": stats.read_text()}
    listing = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=work,
                             capture_output=True, text=True)
    found: dict[str, str] = {}
    for line in listing.stdout.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if name:
            found[name] = status.strip()
    return found


def _survivors(work: Path) -> list[str]:
    listing = subprocess.run([sys.executable, "-m", "mutmut", "results"], cwd=work, capture_output=True, text=True)
    names = [line.strip().rpartition(": ")[0] for line in listing.stdout.splitlines() if ": " in line]
    shown = []
    for name in names:
        diff = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=work, capture_output=True, text=True)
        shown.append(diff.stdout)
    return shown


def run_module(module: str, jobs: int, show: bool = False) -> Score:
    work = _scratch(module, TARGETS[module])
    started = time.monotonic()
    try:
        subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs)], cwd=work,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        found = _results(work)
        if show:
            for diff in _survivors(work):
                print(diff)
    finally:
        elapsed = time.monotonic() - started
    if "__stats__" in found:
        stats = json.loads(found["__stats__"])
        killed = sum(stats.get(key, 0) for key in ("killed", "timeout", "segfault", "suspicious"))
        score = Score(module, killed, stats.get("survived", 0), stats.get("no_tests", 0),
                      stats.get("skipped", 0) + stats.get("check_was_interrupted_by_user", 0), elapsed)
    else:
        statuses = list(found.values())
        killed = sum(status in KILLED for status in statuses)
        survived = statuses.count("survived")
        no_tests = statuses.count("no tests")
        score = Score(module, killed, survived, no_tests, len(statuses) - killed - survived - no_tests, elapsed)
    shutil.rmtree(work, ignore_errors=True)
    return score


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="modules to mutate (default: all targets)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--show", action="store_true", help="print the diff of every surviving mutant")
    args = parser.parse_args()
    modules = args.modules or list(TARGETS)
    unknown = [m for m in modules if m not in TARGETS]
    if unknown:
        parser.error("no test selection for %s (known: %s)" % (", ".join(unknown), ", ".join(TARGETS)))
    print("%-36s %7s %8s %8s %7s %8s" % ("module", "killed", "survived", "no tests", "score", "seconds"))
    for module in modules:
        s = run_module(module, args.jobs, args.show)
        print("%-36s %7d %8d %8d %6.1f%% %8.0f" % (s.module, s.killed, s.survived, s.no_tests, s.percent, s.seconds),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
