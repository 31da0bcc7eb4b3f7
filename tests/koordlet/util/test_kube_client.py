"""The daemon's API client hooks: the agent's name on every request, the client-side
limiter (--kube-api-qps / --kube-api-burst) as waits, each distinct warning logged once."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from structlog.testing import capture_logs

from koordlet.util.kube_client import RequestHooks, user_agent
from koordlet.util.token_bucket import TokenBucket
from tests.koordlet.hubs_helper import config_of


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def hooks_with(qps: float, burst: int):
    clock, waits = Clock(), []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock.now += seconds

    return RequestHooks("koordlet-py/0 (linux/x) n1", TokenBucket(qps, burst, clock=clock), sleep=sleep), waits, clock


async def test_requests_beyond_the_burst_wait_for_the_rate():
    hooks, waits, clock = hooks_with(qps=20, burst=3)
    requests = [SimpleNamespace(headers={}) for _ in range(5)]
    for request in requests:
        await hooks.on_request(request)
    assert all(r.headers["User-Agent"] == "koordlet-py/0 (linux/x) n1" for r in requests)
    assert waits == pytest.approx([0.05, 0.05])  # 3 at once, then one every 1/20 s
    clock.now += 10  # idle: the burst refills
    await hooks.on_request(SimpleNamespace(headers={}))
    assert len(waits) == 2


async def test_each_distinct_warning_is_logged_once():
    import httpx2

    hooks, _, _ = hooks_with(qps=100, burst=10)
    request = httpx2.Request("PUT", "https://api/apis/slo.koordinator.sh/v1alpha1/nodemetrics/n1/status")
    answers = [httpx2.Response(200, headers=[("warning", w)], request=request) for w in ("299 - a", "299 - a", "299 - b")]
    with capture_logs() as logs:
        for answer in answers:
            await hooks.on_response(answer)
    assert [e["warning"] for e in logs if e["event"] == "kube_api_warning"] == ["299 - a", "299 - b"]


def test_the_user_agent_names_the_product_version_platform_and_node():
    from koordlet import __version__

    agent = user_agent("node-7")
    assert agent.startswith("koordlet-py/%s (" % __version__) and agent.endswith(") node-7")


def test_the_limits_are_koordlets_flags_with_its_defaults():
    config = config_of()
    assert (config.common.kube_api_qps, config.common.kube_api_burst) == (20.0, 30)
    tuned = config_of(kube_api_qps=5, kube_api_burst=7)
    assert (tuned.common.kube_api_qps, tuned.common.kube_api_burst) == (5.0, 7)
    with pytest.raises(Exception, match="positive"):
        config_of(kube_api_qps=0)
