"""Kubernetes mode NodeSLO: the node's object followed through a watch with the daemon's
shared client; versions applied once, refusals logged once per version, 410 relists,
errors back off with jitter, the last good NodeSLO kept throughout."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from structlog.testing import capture_logs

from koordlet.daemon.cli import parse_args
from koordlet.slo.cluster_watch import NodeSLOWatch
from koordlet.slo.node_slo import CPUSuppressPolicy, NodeSLO
from koordlet.util.kube_client import KubeApi
from koordlet.util.kube_watch import BACKOFF_MAX_SECONDS, backoff_seconds
from tests.polling import until

lightkube = pytest.importorskip("lightkube")

CONFIG = parse_args(["--node-name", "node-a", "--kubeconfig", "/nonexistent"])
GOOD = {"resourceUsedThresholdWithBE": {"enable": True, "cpuSuppressPolicy": "cfsQuota"}}
BAD = {"resourceUsedThresholdWithBE": {"cpuSuppressThresholdPercent": 101}}


def nodeslo(spec, version: str) -> dict:
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO",
            "metadata": {"name": "node-a", "resourceVersion": version}, "spec": spec}


def gone() -> Exception:
    from lightkube.models.meta_v1 import Status

    return lightkube.ApiError(status=Status(code=410, message="too old resource version: 5 (90)"))


class FakeWatchClient:
    """lightkube's AsyncClient.watch as the API server would drive it: each call to watch()
    plays the next script (events, then an exception or the end of the stream); an
    exception handed to on_error (as lightkube does for HTTP errors) is marked ("on_error", exc)."""

    def __init__(self, scripts):
        self.scripts = list(scripts)
        self.watches: list[dict] = []
        self.closed = False
        self.idle = asyncio.Event()

    async def watch(self, resource, *, fields=None, resource_version=None, on_error=None):
        self.watches.append({"fields": fields, "resource_version": resource_version})
        while self.scripts:
            for step in self.scripts.pop(0):
                if isinstance(step, tuple) and step[0] == "on_error":
                    result = on_error(step[1], 1)
                    assert result.action.name == "RETRY"
                    continue
                if isinstance(step, BaseException):
                    raise step
                yield step[0], step[1]
            return
        self.idle.set()
        await asyncio.Event().wait()  # an open stream with nothing to say

    async def close(self):
        self.closed = True


def watch_over(client, sleeps=None) -> NodeSLOWatch:
    async def sleep(seconds):
        if sleeps is not None:
            sleeps.append(seconds)

    return NodeSLOWatch(CONFIG, KubeApi(CONFIG, opener=lambda config: client), sleep=sleep, rand=lambda: 1.0)


def run(watch: NodeSLOWatch, client: FakeWatchClient) -> None:
    async def scenario():
        await watch.start()
        assert watch.ready()
        await asyncio.wait_for(client.idle.wait(), 10)
        await watch.stop()

    asyncio.run(scenario())


def test_versions_are_applied_and_a_refused_one_keeps_the_last_good():
    client = FakeWatchClient([[("ADDED", nodeslo(GOOD, "10")), ("MODIFIED", nodeslo(BAD, "11"))]])
    watch = watch_over(client)
    run(watch, client)
    assert watch.current().resource_used_threshold_with_be.cpu_suppress_policy is CPUSuppressPolicy.CFS_QUOTA
    assert "cpuSuppressThresholdPercent" in (watch.last_error or "")
    assert watch.source() == "NodeSLO/node-a resourceVersion 11"
    assert client.watches[0] == {"fields": {"metadata.name": "node-a"}, "resource_version": None}
    assert client.closed  # the shared client closed with its last user


def test_a_refused_version_seen_again_after_a_relist_is_not_logged_or_counted_again():
    client = FakeWatchClient([[("ADDED", nodeslo(BAD, "11")), ("on_error", gone()), ("ADDED", nodeslo(BAD, "11"))]])
    watch = watch_over(client)
    with capture_logs() as logs:
        run(watch, client)
    assert watch.refusals == 1 and watch.watch.relists == 1
    assert [e["event"] for e in logs].count("node_slo_rejected") == 1


def test_a_410_raised_at_the_request_restarts_the_watch_without_a_version():
    client = FakeWatchClient([[("ADDED", nodeslo(GOOD, "10"))], [gone()]])
    watch = watch_over(client, [])
    run(watch, client)
    assert [w["resource_version"] for w in client.watches] == [None, "10", None]


def test_an_ended_stream_resumes_from_the_last_version_and_errors_back_off():
    down = ConnectionRefusedError("api server down")
    client = FakeWatchClient([[("ADDED", nodeslo(GOOD, "10"))], [down], [down], [("MODIFIED", nodeslo(GOOD, "12"))]])
    sleeps: list[float] = []
    watch = watch_over(client, sleeps)
    with capture_logs() as logs:
        run(watch, client)
    assert [w["resource_version"] for w in client.watches] == [None, "10", "10", "10", "12"]
    assert sleeps == [backoff_seconds(1, lambda: 1.0), backoff_seconds(2, lambda: 1.0)] == [1.0, 2.0]
    assert [e["event"] for e in logs].count("kube_watch_failed") == 1  # the same error: logged once
    assert watch.source().endswith("12") and watch.watch.failures == 0


def test_a_deleted_object_keeps_the_nodeslo_in_force():
    client = FakeWatchClient([[("ADDED", nodeslo(GOOD, "10")), ("DELETED", nodeslo(GOOD, "13"))]])
    watch = watch_over(client)
    run(watch, client)
    assert watch.current().resource_used_threshold_with_be.enable


def test_without_a_usable_kubeconfig_the_defaults_stay_and_nothing_is_watched():
    watch = NodeSLOWatch(CONFIG, KubeApi(CONFIG))

    async def scenario():
        await watch.start()
        assert watch.ready()
        await watch.stop()

    asyncio.run(scenario())
    assert watch.current() == NodeSLO() and watch.source().startswith("defaults")


def test_backoff_doubles_to_a_minute_with_jitter_in_the_upper_half():
    assert [backoff_seconds(n, lambda: 1.0) for n in (1, 2, 3, 7, 20)] == [1.0, 2.0, 4.0, BACKOFF_MAX_SECONDS,
                                                                          BACKOFF_MAX_SECONDS]
    assert backoff_seconds(3, lambda: 0.0) == 2.0


def test_events_arrive_as_lightkube_objects_too():
    """lightkube decodes generic resources into objects with to_dict()."""
    client = FakeWatchClient([[("MODIFIED", SimpleNamespace(to_dict=lambda: nodeslo(GOOD, "21")))]])
    watch = watch_over(client)
    run(watch, client)
    assert watch.source() == "NodeSLO/node-a resourceVersion 21"
    assert watch.current().resource_used_threshold_with_be.enable
    assert client.watches[-1]["resource_version"] == "21"  # resumed from the object's version


async def test_the_daemon_shares_one_client_between_its_users():
    opened: list[FakeWatchClient] = []

    def opener(config):
        opened.append(FakeWatchClient([]))
        return opened[-1]

    kube = KubeApi(CONFIG, opener=opener)
    first, second = kube.acquire(), kube.acquire()
    assert first is second and len(opened) == 1
    await kube.release()
    assert not first.closed
    await kube.release()
    assert first.closed
    await until(lambda: first.closed)
