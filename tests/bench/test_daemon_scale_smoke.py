"""bench.daemon_scale's pure parts: the workload, the cgroup dirs, the figures and the table.

No daemon, no timing: the bench itself prints the figures (docs/PERFORMANCE.md).
"""

from __future__ import annotations

import argparse

from bench.daemon_scale import (
    ProcSample,
    cgroup_dirs,
    count_series,
    drift_figures,
    drift_line,
    latency,
    ratios,
    scrape_figures,
    table,
    while_scraped_line,
    window_figures,
    workload,
)


def test_workload_has_two_containers_per_pod_under_their_pod_cgroup() -> None:
    pods = workload(10, cpu=0)
    assert len(pods) == 10
    assert {len(ctrs) for _, ctrs in pods} == {2}
    for pod, ctrs in pods:
        assert all(c.linux.cgroups_path.startswith(pod.linux.cgroup_parent + "/") for c in ctrs)
    assert [p.labels["koordinator.sh/qosClass"] for p, _ in pods].count("BE") == 5


def test_cgroup_dirs_list_parents_before_children() -> None:
    dirs = cgroup_dirs(workload(3, cpu=0))
    assert len(dirs) == 3 + 3 * 3
    for i, rel in enumerate(dirs):
        parent = rel.rsplit("/", 1)[0]
        assert "/" not in rel or parent in dirs[:i]


def test_window_figures_from_three_samples() -> None:
    start = ProcSample(at=0.0, cpu_s=1.0, system_s=0.5, loop_cpu_s=0.4, rss_kib=10240, hwm_kib=10240, fds=10)
    mid = ProcSample(at=10.0, cpu_s=1.1, system_s=0.56, loop_cpu_s=0.43, rss_kib=11264, hwm_kib=11264, fds=12)
    end = ProcSample(at=20.0, cpu_s=1.3, system_s=0.6, loop_cpu_s=0.5, rss_kib=12288, hwm_kib=13312, fds=11)
    got = window_figures(start, mid, end)
    assert round(got["cpu_pct_quiet"], 6) == 1.0 and round(got["cpu_pct_quiet_system"], 6) == 0.6
    assert round(got["cpu_pct_quiet_loop"], 6) == 0.3
    assert round(got["cpu_pct_creates"], 6) == 2.0
    assert got["rss_growth_mib"] == 2.0 and got["hwm_mib"] == 13.0 and got["fds_max"] == 12


def test_series_are_the_non_comment_lines() -> None:
    body = b"# HELP a x\n# TYPE a gauge\na 1\na{b=\"c\"} 2\n\n"
    assert count_series(body) == 2
    assert scrape_figures([3.0, 1.0], [2.0, 2.0], body)["series"] == 2


def test_table_has_a_row_per_result() -> None:
    lat = latency([100.0, 200.0, 300.0])
    floor = latency([50.0, 100.0, 150.0])
    assert ratios(lat, floor) == {"ratio_p50": 2.0, "ratio_p99": 2.0}
    start = ProcSample(at=0.0, cpu_s=0.0, system_s=0.0, loop_cpu_s=0.0, rss_kib=1024, hwm_kib=1024, fds=3)
    mid = ProcSample(at=1.0, cpu_s=0.01, system_s=0.0, loop_cpu_s=0.0, rss_kib=1024, hwm_kib=1024, fds=3)
    end = ProcSample(at=2.0, cpu_s=0.02, system_s=0.0, loop_cpu_s=0.0, rss_kib=1024, hwm_kib=1024, fds=3)
    result = {"pods": 7, "load_s": 0.1, **window_figures(start, mid, end), "scrape_wall_ms_p50": 1.0,
              "scrape_cpu_ms_p50": 1.0, "prometheus_scrape_cpu_ms_p50": 2.0, "series": 5, "body_bytes": 2048, "rss_scraped_mib": 1.5, "readyz": 200, "create": lat,
              "floor": floor, **ratios(lat, floor)}
    lines = table([result]).splitlines()
    assert len(lines) == 2 and lines[1].split()[0] == "7"


def test_the_while_scraped_line_gives_both_latencies_their_ratios_and_the_storm_cost() -> None:
    result = {"pods": 7, "window_s": 2.0, "cpu_pct_quiet": 1.5, "while_scraped": {
        "scrapers": 4, "scrapes": 3, "create": latency([400.0]), "floor": latency([100.0]), "cpu_pct": 12.5,
        "rss_before_mib": 40.0, "rss_after_mib": 41.5, "hwm_before_mib": 42.0, "hwm_after_mib": 43.0}}
    line = while_scraped_line(result)
    assert "N=7" in line and "4 client(s)" in line and "3 scrapes, 1.5 a second" in line
    assert "x p50 4.00" in line and "x p99 4.00" in line
    assert "CPU 12.5 % (quiet 1.5 %)" in line and "RSS 40.0 -> 41.5 MiB, HWM 42.0 -> 43.0" in line


def test_the_drift_figures_are_the_least_squares_line_through_the_rss_samples() -> None:
    def at(minute: float, rss_mib: float) -> ProcSample:
        kib = round(rss_mib * 1024)
        return ProcSample(at=minute * 60, cpu_s=minute * 0.6, system_s=0.0, loop_cpu_s=0.0, rss_kib=kib, hwm_kib=kib,
                          fds=3)

    # 0.1 MiB a minute, and a 3 MiB spike at the middle sample, which moves the line's
    # level but not its slope
    samples = [at(0, 70.0), at(1, 70.1), at(2, 73.2), at(3, 70.3), at(4, 70.4)]
    floor_kib = [30 * 1024, 30 * 1024 + 51, 30 * 1024 + 102, 30 * 1024 + 154, 30 * 1024 + 205]  # ~0.05 MiB a minute
    drift = drift_figures(samples, floor_kib)
    rss = (drift["rss_start_mib"], drift["rss_end_mib"], drift["rss_max_mib"])
    assert [round(mib, 2) for mib in rss] == [70.0, 70.4, 73.2]
    assert drift["minutes"] == 4 and abs(drift["cpu_pct"] - 1.0) < 1e-9
    assert abs(drift["rss_slope_mib_per_10min"] - 1.0) < 1e-3  # KiB rounding of the samples
    assert abs(drift["floor_rss_slope_mib_per_10min"] - 0.5) < 1e-2
    assert round(drift["floor_rss_start_mib"], 2) == 30.0 and round(drift["floor_rss_end_mib"], 2) == 30.2
    line = drift_line({"pods": 7, "drift": drift})
    assert "N=7" in line and "+1.00 MiB per 10 min" in line and "70.0 -> 70.4" in line
    assert "30.0 -> 30.2 MiB, slope +0.50" in line and "less the floor's +0.50" in line


def test_the_benches_that_drive_daemon_scale_pass_every_option_it_reads() -> None:
    """daemon_holds and daemon_memory run `run_one` with daemon_scale's own defaults and their
    window: an option daemon_scale gains reaches them (--scraped-creates once did not)."""
    from bench import daemon_holds, daemon_scale
    defaults = vars(daemon_scale.parse_args([]))
    holds = vars(daemon_holds.scale_arguments(argparse.Namespace(warmup=5.0, window=7.0, creates=9)))
    assert holds.keys() == defaults.keys()
    assert (holds["warmup"], holds["window"], holds["creates"], holds["scraped_creates"]) == (5.0, 7.0, 9, 0)
