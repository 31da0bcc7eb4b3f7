"""bench.koordlet_reads: which files it counts as koordlet's per-second reads."""

from __future__ import annotations

from bench.daemon_scale import cgroup_dirs, workload
from bench.koordlet_reads import KOORDLET_FILES, per_second_paths


def test_three_files_for_every_pod_and_container_cgroup_and_none_for_the_tiers() -> None:
    dirs = cgroup_dirs(workload(4, cpu=0))
    paths = per_second_paths("t", dirs)
    assert len(paths) == 3 * (4 + 4 * 2)  # 4 pods, 2 containers each
    assert not any(path.endswith(("/kubepods/" + name, "/besteffort/" + name, "/burstable/" + name))
                   for path in paths for _, name in KOORDLET_FILES)
    assert {path.rsplit("/", 1)[1] for path in paths} == {name for _, name in KOORDLET_FILES}
    assert all(path.startswith("/sys/fs/cgroup/%s/t/" % controller)
               for path in paths for controller, name in KOORDLET_FILES if path.endswith("/" + name))
