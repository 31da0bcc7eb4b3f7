"""Invalid input is logged once per pod, and what is remembered stays bounded."""

from __future__ import annotations

from structlog.testing import capture_logs

from koordlet.statesinformer.problems import InputProblem, ProblemLog

BAD = InputProblem("koordinator.sh/qosClass", "GOLD", "not a class")
WORSE = InputProblem("katalyst.kubewharf.io/qos_level", "x", "unknown level")


def test_each_problem_of_a_pod_is_logged_once() -> None:
    problems = ProblemLog()
    with capture_logs() as logs:
        for _ in range(5):
            problems.report("uid-1", "web", [BAD])
        problems.report("uid-1", "web", [BAD, WORSE])
        problems.report("uid-2", "api", [BAD])
    assert [(entry["pod_uid"], entry["key"]) for entry in logs] == [
        ("uid-1", BAD.key), ("uid-1", WORSE.key), ("uid-2", BAD.key)]
    assert all(entry["event"] == "pod_input_invalid" and entry["log_level"] == "warning" for entry in logs)


def test_a_changed_value_is_logged_again_and_a_forgotten_pod_starts_over() -> None:
    problems = ProblemLog()
    with capture_logs() as logs:
        problems.report("uid-1", "web", [BAD])
        problems.report("uid-1", "web", [InputProblem(BAD.key, "SILVER", BAD.reason)])
        problems.forget("uid-1")
        problems.report("uid-1", "web", [BAD])
    assert [entry["value"] for entry in logs] == ["GOLD", "SILVER", "GOLD"]


def test_memory_is_bounded_by_capacity_oldest_pods_first() -> None:
    problems = ProblemLog(capacity=100)
    for n in range(10_000):
        problems.report("uid-%d" % n, "p", [BAD])
    assert len(problems) == 100
    with capture_logs() as logs:
        problems.report("uid-9999", "p", [BAD])  # still remembered
        problems.report("uid-0", "p", [BAD])  # evicted long ago: logged again
    assert [entry["pod_uid"] for entry in logs] == ["uid-0"]


def test_pods_without_problems_take_no_memory() -> None:
    problems = ProblemLog()
    problems.report("uid-1", "web", [])
    assert len(problems) == 0
