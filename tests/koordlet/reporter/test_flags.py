"""The reporter's flags, spelled as Katalyst and koordlet spell them."""

import pytest

from koordlet.config import ConfigError
from koordlet.daemon.cli import parse_args
from koordlet.reporter.options import ReporterOptions


def test_defaults_are_the_seed_values_and_koordlet_windows():
    config = parse_args([])
    assert config[ReporterOptions].sysadvisor_plugin_enabled("overcommit_aware")
    assert config[ReporterOptions].realtime_overcommit_sync_period == 10.0
    assert (config[ReporterOptions].realtime_overcommit_CPU_targetload, config[ReporterOptions].realtime_overcommit_estimated_cpuload) == (0.6, 0.4)
    assert (config[ReporterOptions].realtime_overcommit_mem_targetload, config[ReporterOptions].realtime_overcommit_estimated_memload) == (0.6, 0.6)
    assert config[ReporterOptions].CPU_metrics_to_gather == ("cpu.usage.container",)
    assert config[ReporterOptions].memory_metrics_to_gather == ("mem.usage.container",)
    assert (config[ReporterOptions].report_interval_seconds, config[ReporterOptions].aggregate_duration_seconds) == (60, 300)
    assert config[ReporterOptions].aggregate_durations == (300.0, 600.0, 1800.0)
    assert (config[ReporterOptions].cpu_reclaim_threshold_percent, config[ReporterOptions].memory_reclaim_threshold_percent) == (60, 65)
    assert config.common.feature_gates.enabled("NodeMetricReport") and config.common.feature_gates.enabled("OvercommitReport")


def test_katalyst_command_line_is_accepted():
    config = parse_args(["--sysadvisor-plugins=*,-overcommit_aware", "--realtime-overcommit-sync-period=30s",
                         "--realtime-overcommit-CPU-targetload=0.5", "--realtime-overcommit-mem-targetload=0.8",
                         "--realtime-overcommit-estimated-cpuload=0.3", "--realtime-overcommit-estimated-memload=0.8",
                         "--CPU-metrics-to-gather=cpu.usage.container,load.1min.container,load.5min.container",
                         "--memory-metrics-to-gather=mem.usage.container,mem.rss.container"])
    assert not config[ReporterOptions].sysadvisor_plugin_enabled("overcommit_aware")
    assert config[ReporterOptions].realtime_overcommit_sync_period == 30.0
    assert config[ReporterOptions].realtime_overcommit_mem_targetload == 0.8
    assert config[ReporterOptions].CPU_metrics_to_gather[-1] == "load.5min.container"


def test_config_file_takes_the_same_keys(tmp_path):
    path = tmp_path / "koordlet.yaml"
    path.write_text("realtime-overcommit-CPU-targetload: 0.7\naggregate-durations: 1m,5m\n")
    config = parse_args(["--config", str(path)])
    assert config[ReporterOptions].realtime_overcommit_CPU_targetload == 0.7
    assert config[ReporterOptions].aggregate_durations == (60.0, 300.0)


@pytest.mark.parametrize("flag", ["--realtime-overcommit-CPU-targetload=0", "--realtime-overcommit-mem-targetload=1.1",
                                  "--cpu-reclaim-threshold-percent=101", "--report-interval-seconds=-5",
                                  "--aggregate-durations=", "--memory-metrics-to-gather=mem.rss.container",
                                  "--CPU-metrics-to-gather=cpu.bogus", "--sysadvisor-plugins=a b"])
def test_bad_values_are_clear_errors(flag):
    with pytest.raises(ConfigError):
        parse_args([flag])
