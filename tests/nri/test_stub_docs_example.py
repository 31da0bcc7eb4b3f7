"""The example plugin of docs/nri.md, taken from the document, runs against the peer."""

import asyncio
import re
from pathlib import Path

from nri.stub import Stub, StubConfig
from nri.testing import RuntimePeer
from tests.nri.conftest import make_container, make_pod

DOC = Path(__file__).resolve().parents[2] / "docs" / "nri.md"


def _example_namespace():
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    body = code.split("\nstub = ")[0]  # everything but starting the stub
    assert len([line for line in code.splitlines() if line.strip()]) <= 15
    namespace: dict = {}
    exec(compile(body, str(DOC), "exec"), namespace)
    return namespace


async def test_docs_example_plugin_sets_best_effort_shares(socket_path):
    plugin = _example_namespace()["BestEffortShares"]()
    async with RuntimePeer(socket_path) as peer:
        stub = Stub(plugin, name="koordlet", index="10", config=StubConfig(socket_path=str(socket_path)), environ={})
        task = await stub.start(timeout=5)
        try:
            be = make_pod(1, qos="BE")
            ls = make_pod(2, qos="LS")
            created_be = await asyncio.wait_for(peer.create_container(be, make_container(1, be)), 5)
            created_ls = await asyncio.wait_for(peer.create_container(ls, make_container(2, ls)), 5)
            assert created_be.linux.resources.cpu.shares.value == 2
            assert created_ls.linux.resources.cpu.shares.value == 1024
        finally:
            await stub.stop()
            await asyncio.wait_for(task, 5)
