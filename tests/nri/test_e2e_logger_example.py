"""The example logger plugin, run as `python -m nri.examples.logger`, against the test peer."""

import asyncio
import json
import os
import sys

from nri.events import Event
from nri.testing.peer import RuntimePeer
from tests.nri.conftest import make_container, make_pod

T = 10.0


async def test_logger_example_logs_every_event_as_json(socket_path):
    pod = make_pod(1)
    ctr = make_container(1, pod)
    async with RuntimePeer(socket_path) as peer:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "nri.examples.logger", "--socket", str(socket_path), "--index", "30",
            cwd=root, env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        try:
            (p,) = await peer.wait_plugins(1, timeout=T)
            assert p.full_name == "30-logger" and p.mask == 0x3FFF
            await asyncio.wait_for(peer.run_pod_sandbox(pod), T)
            created = await asyncio.wait_for(peer.create_container(pod, ctr), T)
            assert created == ctr  # the logger changes nothing
            await asyncio.wait_for(peer.container_event(Event.START_CONTAINER, pod, ctr), T)
        finally:
            proc.terminate()
            out, err = await asyncio.wait_for(proc.communicate(), T)
    lines = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    events = [line["event"] for line in lines]
    for name in ("Configure", "Synchronize", "RunPodSandbox", "CreateContainer", "StartContainer"):
        assert name in events, (name, events, err.decode()[-2000:])
    create = next(line for line in lines if line["event"] == "CreateContainer")
    assert create["container"]["id"] == ctr.id and create["pod"]["id"] == pod.id
    assert events[-1] == "stopped" and proc.returncode == 0  # SIGTERM stops it cleanly
