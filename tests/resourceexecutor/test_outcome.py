"""BatchResult: results by index, counts, and what counts as a problem."""
from __future__ import annotations

from resourceexecutor.outcome import BatchResult, Outcome
from system.errors import Gone, KernelRejected


def test_results_line_up_with_updaters_and_carry_errors():
    gone, refused = Gone("cgroup directory is gone", "/x"), KernelRejected("no", "/y", errno=16)
    result = BatchResult(("u0", "u1", "u2"),  # type: ignore[arg-type]
                         [Outcome.WRITTEN, Outcome.GONE, Outcome.FAILED], {1: gone, 2: refused})
    assert [(r.updater, r.outcome, r.error) for r in result] == [
        ("u0", Outcome.WRITTEN, None), ("u1", Outcome.GONE, gone), ("u2", Outcome.FAILED, refused)]
    assert result.counts() == {Outcome.WRITTEN: 1, Outcome.GONE: 1, Outcome.FAILED: 1}
    assert [r.updater for r in result.with_outcome(Outcome.GONE)] == ["u1"]
    assert len(result) == 3


def test_gone_and_unsupported_are_not_problems_but_invalid_and_failed_are():
    calm = BatchResult(("a", "b"),  # type: ignore[arg-type]
                       [Outcome.GONE, Outcome.NOT_SUPPORTED])
    assert calm.ok
    for bad in (Outcome.INVALID, Outcome.FAILED):
        assert not BatchResult(("a",), [bad]).ok  # type: ignore[arg-type]
