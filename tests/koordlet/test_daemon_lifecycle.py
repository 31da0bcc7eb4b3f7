"""Daemon: start order, stop order, failures and readiness, in-process."""

from __future__ import annotations

import asyncio
import os
import signal

from koordlet.agent import StartupError
from koordlet.daemon.lifecycle import Daemon
from tests.polling import until


class Recorder:
    def __init__(self, name, journal, fail=None, is_ready=True, slow_stop=0.0):
        self.name, self.journal, self.fail, self.is_ready, self.slow_stop = name, journal, fail, is_ready, slow_stop

    async def start(self):
        if self.fail:
            raise self.fail
        self.journal.append(("start", self.name))

    async def stop(self):
        await asyncio.sleep(self.slow_stop)
        self.journal.append(("stop", self.name))

    def ready(self):
        return self.is_ready


async def test_modules_start_in_order_and_stop_in_reverse():
    journal = []
    daemon = Daemon([Recorder("a", journal), Recorder("b", journal)])
    runner = asyncio.create_task(daemon.run())
    await until(daemon.started.is_set)
    assert daemon.readiness().ready
    daemon.request_stop()
    assert await asyncio.wait_for(runner, 2) == 0
    assert journal == [("start", "a"), ("start", "b"), ("stop", "b"), ("stop", "a")]


async def test_failing_module_gives_its_exit_code_and_stops_the_started_ones():
    journal = []
    daemon = Daemon([Recorder("a", journal), Recorder("b", journal, fail=StartupError("nope", 2)),
                     Recorder("c", journal)])
    assert await asyncio.wait_for(daemon.run(), 2) == 2
    assert journal == [("start", "a"), ("stop", "a")]


async def test_module_bug_at_start_is_exit_1_not_a_traceback():
    daemon = Daemon([Recorder("a", [], fail=RuntimeError("bug"))])
    assert await asyncio.wait_for(daemon.run(), 2) == 1


async def test_readiness_names_modules_that_are_not_ready():
    journal = []
    daemon = Daemon([Recorder("a", journal), Recorder("b", journal, is_ready=False)])
    assert daemon.readiness().not_ready == ("a", "b")  # nothing started yet
    runner = asyncio.create_task(daemon.run())
    await until(daemon.started.is_set)
    assert daemon.readiness().not_ready == ("b",)
    daemon.request_stop()
    await asyncio.wait_for(runner, 2)


async def test_sigterm_stops_the_daemon_and_a_hung_module_cannot_hold_it():
    journal = []
    daemon = Daemon([Recorder("fast", journal), Recorder("hung", journal, slow_stop=30)], shutdown_grace=0.5)
    runner = asyncio.create_task(daemon.run())
    await asyncio.sleep(0.01)
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(runner, 2) == 0
    assert journal[-1] == ("stop", "fast")


def test_hub_modules_start_before_the_agents_and_http_last(tmp_path):
    from koordlet.agent import AgentSpec, Built
    from koordlet.daemon.cli import parse_args
    from koordlet.ports import Ports
    from tests.koordlet.hubs_helper import built_daemon

    seen_hubs = []

    class Probe:
        def __init__(self, name: str) -> None:
            self.name = name

        async def start(self) -> None: ...

        async def stop(self) -> None: ...

        def ready(self) -> bool:
            return True

    offered = Probe("offered")

    def provider(hubs):
        seen_hubs.append(hubs)
        return Built((Probe("provider"),), offers=Ports(admitter=offered))

    def reader(hubs):
        seen_hubs.append(hubs)
        return Built((Probe("reader"),))

    agents = [AgentSpec("provider", lambda c: True, provider), AgentSpec("off", lambda c: False, reader),
              AgentSpec("reader", lambda c: True, reader)]
    config = parse_args(["--addr", "127.0.0.1:0", "--state-dir", str(tmp_path)])
    with built_daemon(config, agents) as daemon:
        # none started yet, in start order: hubs' modules, enabled agents in registry order, http
        assert daemon.readiness().not_ready == ("resourceexecutor", "metriccache", "provider", "reader", "http")
    first, second = seen_hubs
    assert first.config is config and second.states is first.states  # one hub, shared
    assert second.ports.admitter is offered and first.ports.admitter is not offered


async def test_a_module_whose_start_hangs_fails_the_start_with_a_clear_error():
    from structlog.testing import capture_logs

    class Hangs:
        name = "hangs"

        async def start(self):
            await asyncio.Event().wait()

        async def stop(self):
            pass

        def ready(self):
            return False

    journal = []
    daemon = Daemon([Recorder("a", journal), Hangs(), Recorder("c", journal)], start_timeout=0.05)
    with capture_logs() as logs:
        assert await asyncio.wait_for(daemon.run(), 2) == 1
    assert journal == [("start", "a"), ("stop", "a")]
    (line,) = [e for e in logs if e["event"] == "module_start_timed_out"]
    assert line["module"] == "hangs" and line["timeout_s"] == 0.05
