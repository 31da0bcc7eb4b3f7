"""bench.cri_create: the pods it asks containerd for, the rotation of set-ups, the added-cost figures."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from bench.cri_create import (
    BASELINE,
    EXPECTED_BE_CGROUP,
    SETUPS,
    Sandbox,
    container_config,
    mean_call_us,
    order_of,
    plugin_latency,
    plugin_name,
    ratios,
    sandbox_config,
    setups_of,
    summary,
    time_creates,
)
from proto.cri import api_pb2 as cri


def test_pods_share_the_node_network_without_a_hostname_and_alternate_be_and_ls(tmp_path: Path) -> None:
    be, ls = sandbox_config(0, tmp_path), sandbox_config(1, tmp_path)
    for config in (be, ls):
        assert config.linux.security_context.namespace_options.network == cri.NODE  # no CNI needed
        assert config.hostname == ""  # runc refuses a hostname in the node's UTS namespace
        assert config.linux.cgroup_parent.endswith("/pod" + config.metadata.uid)
    assert be.labels["koordinator.sh/qosClass"] == "BE" and be.linux.cgroup_parent.startswith("/kubepods/besteffort/")
    spec = json.loads(be.annotations["node.koordinator.sh/extended-resource-spec"])
    assert "c" in spec["containers"]
    assert ls.labels["koordinator.sh/qosClass"] == "LS" and not ls.annotations
    assert sandbox_config(2, tmp_path).metadata.uid != be.metadata.uid


def test_each_create_gets_its_own_attempt_and_log_and_be_ones_kubelets_best_effort_values() -> None:
    first, second = container_config("img", 1, True), container_config("img", 2, False)
    assert (first.metadata.attempt, second.metadata.attempt) == (1, 2)
    assert first.log_path != second.log_path and first.image.image == "img"
    assert (first.linux.resources.cpu_shares, first.linux.resources.cpu_quota) == (2, 0)  # nothing of batch here
    assert second.linux.resources.cpu_quota > 0 and second.linux.resources.memory_limit_in_bytes > 0


def test_expected_be_values_follow_the_batch_spec_the_pods_carry(tmp_path: Path) -> None:
    spec = json.loads(sandbox_config(0, tmp_path).annotations["node.koordinator.sh/extended-resource-spec"])
    limits = spec["containers"]["c"]["limits"]
    milli = int(limits["kubernetes.io/batch-cpu"])
    assert EXPECTED_BE_CGROUP[("cpu", "cpu.shares")] == milli * 1024 // 1000
    assert EXPECTED_BE_CGROUP[("cpu", "cpu.cfs_quota_us")] == milli * 100
    assert limits["kubernetes.io/batch-memory"] == "%dMi" % (EXPECTED_BE_CGROUP[("memory", "memory.limit_in_bytes")] >> 20)


def test_every_set_up_goes_first_once_in_as_many_rounds() -> None:
    orders = [order_of(r) for r in range(len(SETUPS))]
    assert sorted(order[0] for order in orders) == sorted(SETUPS)
    assert all(sorted(order) == sorted(SETUPS) for order in orders)


def test_a_baseline_checkout_is_one_more_set_up_rotated_and_measured_like_the_others() -> None:
    setups = setups_of(SimpleNamespace(baseline=Path("/elsewhere")))
    assert setups == SETUPS + (BASELINE,) and setups_of(SimpleNamespace(baseline=None)) == SETUPS
    assert sorted(order_of(r, setups)[0] for r in range(len(setups))) == sorted(setups)
    rounds = {"none": [[100.0]], "go": [[150.0]], "pyempty": [[130.0]], "koordlet": [[140.0]], BASELINE: [[170.0]]}
    figures = summary(rounds)
    assert figures[BASELINE]["added_p50_us"] == 70.0 and ratios(figures, BASELINE)["p50"] == 70.0 / 50.0
    assert plugin_name(BASELINE) == plugin_name("koordlet")  # the same daemon: containerd names it alike


def test_added_is_the_median_over_rounds_of_each_rounds_difference_to_the_floor() -> None:
    # round 2 is a slow stretch of the host for everyone: it must not decide the figure
    rounds = {"none": [[100.0] * 10, [900.0] * 10, [100.0] * 10],
              "go": [[150.0] * 10, [990.0] * 10, [160.0] * 10],
              "pyempty": [[130.0] * 10, [1000.0] * 10, [120.0] * 10],
              "koordlet": [[140.0] * 10, [800.0] * 10, [140.0] * 10]}
    figures = summary(rounds)
    assert figures["go"]["added_p50_us"] == 60.0  # median of 50, 90, 60
    assert figures["koordlet"]["added_p50_us"] == 40.0  # median of 40, -100, 40
    assert figures["pyempty"]["added_p50_us"] == 30.0
    assert figures["none"]["p50_us"] == 100.0 and figures["none"]["max_us"] == 900.0
    assert ratios(figures)["p50"] == 40.0 / 60.0
    assert ratios(figures, "pyempty")["p50"] == 0.5


def test_no_ratio_unless_both_plugins_added_latency() -> None:
    rounds = {"none": [[100.0]], "go": [[100.0]], "pyempty": [[120.0]], "koordlet": [[90.0]]}
    figures = summary(rounds)
    assert all(value != value for value in ratios(figures).values())  # NaN


CONTAINERD_METRICS = """# HELP containerd_nri_plugin_latency_seconds NRI plugin operation latency
# TYPE containerd_nri_plugin_latency_seconds histogram
containerd_nri_plugin_latency_seconds_bucket{operation="CreateContainer",plugin="00-koordlet_nri",le="+Inf"} 4
containerd_nri_plugin_latency_seconds_sum{operation="CreateContainer",plugin="00-koordlet_nri"} 0.002
containerd_nri_plugin_latency_seconds_count{operation="CreateContainer",plugin="00-koordlet_nri"} 4
containerd_nri_plugin_latency_seconds_bucket{operation="RemoveContainer",plugin="00-koordlet_nri",le="+Inf"} 9
containerd_nri_plugin_latency_seconds_sum{operation="RemoveContainer",plugin="00-koordlet_nri"} 9.0
containerd_nri_plugin_latency_seconds_count{operation="RemoveContainer",plugin="00-koordlet_nri"} 9
containerd_nri_plugin_latency_seconds_bucket{operation="CreateContainer",plugin="50-goempty",le="+Inf"} 2
containerd_nri_plugin_latency_seconds_sum{operation="CreateContainer",plugin="50-goempty"} 0.0006
containerd_nri_plugin_latency_seconds_count{operation="CreateContainer",plugin="50-goempty"} 2
"""


def test_containerds_timing_is_read_per_plugin_and_operation() -> None:
    assert plugin_latency(CONTAINERD_METRICS, plugin_name("koordlet")) == (0.002, 4.0)
    assert plugin_latency(CONTAINERD_METRICS, plugin_name("go")) == (0.0006, 2.0)
    assert plugin_latency(CONTAINERD_METRICS, plugin_name("pyempty")) == (0.0, 0.0)
    assert mean_call_us((0.001, 2.0), plugin_latency(CONTAINERD_METRICS, plugin_name("koordlet"))) == 500.0
    assert mean_call_us((0.002, 4.0), (0.002, 4.0)) != mean_call_us((0.002, 4.0), (0.002, 4.0))  # no call: NaN


class RecordingRuntime:
    """The CRI calls time_creates makes, in order (a stand-in for containerd's RuntimeService)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def CreateContainer(self, request):  # noqa: N802 (the CRI's method names)
        self.calls.append("create")
        return cri.CreateContainerResponse(container_id="c%d" % len(self.calls))

    def StartContainer(self, request):  # noqa: N802
        self.calls.append("start " + request.container_id)

    def StopContainer(self, request):  # noqa: N802
        self.calls.append("stop " + request.container_id)

    def RemoveContainer(self, request):  # noqa: N802
        self.calls.append("remove " + request.container_id)


def test_with_start_each_timed_container_is_started_and_stopped_before_its_removal(tmp_path: Path) -> None:
    sandbox = Sandbox("sb", sandbox_config(0, tmp_path))
    created_only, started = RecordingRuntime(), RecordingRuntime()
    assert len(time_creates(created_only, sandbox, "img", 2, [0])) == 2
    assert created_only.calls == ["create", "remove c1", "create", "remove c3"]
    assert len(time_creates(started, sandbox, "img", 1, [0], start=True)) == 1
    assert started.calls == ["create", "start c1", "stop c1", "remove c1"]
