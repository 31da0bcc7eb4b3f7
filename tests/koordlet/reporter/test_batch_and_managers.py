"""Koordinator's batch resources, and the CPU/memory manager facts read from kubelet's
checkpoint files (formats as kubelet writes them, pkg/kubelet/cm/cpumanager/state)."""

import json

import pytest

from koordlet.apis.qos import KoordQoSClass
from koordlet.reporter.batch import PODS_PER_SUM_STEP, ReclaimThresholds, batch_resources, batch_resources_steps
from koordlet.reporter.nodemetric import Usage
from koordlet.reporter.resource_managers import KubeletStateFiles, StateFileError, parse_cpu_manager_state
from tests.koordlet.reporter.fixtures import GI, pod
from tests.stepping import driven

LS = pod("ls", KoordQoSClass.LS, cpu_request=4000, memory_request=8 * GI)
BE = pod("be", KoordQoSClass.BE)


def test_batch_follows_the_slo_controller_example():
    # 100 cores / 100 GiB; node uses 50 cores / 55 GiB of which pods 40 / 50 (LS 30 / 35, BE 10 / 15):
    # reserve 40 / 35, system 10 / 5, batch = 100-40-10-30 = 20 cores, 100-35-5-35 = 25 GiB
    usage = {LS.uid: Usage(30, 35 * GI), BE.uid: Usage(10, 15 * GI)}
    batch = batch_resources(100_000, 100 * GI, Usage(50, 55 * GI), [LS, BE], usage)
    assert (batch.milli_cpu, batch.memory_bytes) == (20_000, 25 * GI)
    assert batch.resource_list() == {"kubernetes.io/batch-cpu": "20000", "kubernetes.io/batch-memory": "25Gi"}


def test_batch_is_never_negative():
    usage = {LS.uid: Usage(90, 90 * GI)}
    batch = batch_resources(100_000, 100 * GI, Usage(95, 95 * GI), [LS], usage)
    assert (batch.milli_cpu, batch.memory_bytes) == (0, 0)


def test_a_non_be_pod_without_usage_counts_with_its_request():
    batch = batch_resources(100_000, 100 * GI, Usage(0, 0), [LS, BE], {})
    assert (batch.milli_cpu, batch.memory_bytes) == (60_000 - 4000, 65 * GI - 8 * GI)


def test_the_sums_yield_every_step_of_pods_and_give_the_same_batch():
    pods = [pod("p%d" % i, KoordQoSClass.BE if i % 3 else KoordQoSClass.LS, cpu_request=100,
                memory_request=GI) for i in range(2 * PODS_PER_SUM_STEP + 1)]
    usage = {p.uid: Usage(0.01, GI / 4) for p in pods[::2]}  # half with usage, half counted by request
    yields, stepped = driven(batch_resources_steps(1_000_000, 4096 * GI, Usage(30, 600 * GI), pods, usage))
    assert yields == 2
    assert stepped == batch_resources(1_000_000, 4096 * GI, Usage(30, 600 * GI), pods, usage)
    # the LS pods with no usage count with their requests, every pod with usage with its usage
    ls_requests = sum(100 for i, p in enumerate(pods) if i % 3 == 0 and p.uid not in usage)
    ls_usage = sum(10 for i, p in enumerate(pods) if i % 3 == 0 and p.uid in usage)
    all_usage = 10 * len(usage)
    assert stepped.milli_cpu == 1_000_000 - 400_000 - (30_000 - all_usage) - ls_requests - ls_usage


def test_thresholds_outside_a_percentage_are_refused():
    with pytest.raises(ValueError):
        ReclaimThresholds(cpu_percent=120)


STATE = {"policyName": "static", "defaultCpuSet": "0,5-7",
         "entries": {"uid-a": {"app": "1-2"}, "uid-b": {"app": "3", "sidecar": "4"}, "uid-gone": {"x": "8-9"}},
         "checksum": 1}


def test_guaranteed_cpus_count_the_known_pods_exclusive_cpus():
    assert parse_cpu_manager_state(json.dumps(STATE), {"uid-a", "uid-b"}) == ("static", 4)
    assert parse_cpu_manager_state(json.dumps(STATE), None) == ("static", 6)


def test_state_files_give_policies_and_missing_files_mean_off(tmp_path):
    assert KubeletStateFiles(tmp_path).facts(None).cpu_manager_policy == "none"
    assert KubeletStateFiles(tmp_path).facts(None).memory_manager_policy == "None"
    (tmp_path / "cpu_manager_state").write_text(json.dumps(STATE))
    (tmp_path / "memory_manager_state").write_text(json.dumps({"policyName": "Static", "machineState": {}}))
    facts = KubeletStateFiles(tmp_path).facts({"uid-a"})
    assert (facts.cpu_manager_policy, facts.memory_manager_policy, facts.guaranteed_cpus) == ("static", "Static", 2)


def test_a_none_policy_reports_no_guaranteed_cpus(tmp_path):
    (tmp_path / "cpu_manager_state").write_text(json.dumps({"policyName": "none", "defaultCpuSet": "0-7"}))
    assert KubeletStateFiles(tmp_path).facts(None).guaranteed_cpus == 0


@pytest.mark.parametrize("text", ["{", "[]", json.dumps({"entries": {}}),
                                  json.dumps({"policyName": "static", "entries": {"u": {"c": "x-y"}}})])
def test_a_malformed_state_file_is_a_clear_error(text):
    with pytest.raises(StateFileError):
        parse_cpu_manager_state(text, None)
