"""A process running the ORM module, fed pods by its parent (the runtime stand-in) on stdin.

    python -m tests.koordlet.orm.crash_child ROOT serve   # "add UID" / "del UID" lines in,
                                                          # "ok UID CPUS" after each commit out
    python -m tests.koordlet.orm.crash_child ROOT dump UID...  # restart with those pods live,
                                                               # print the allocations as JSON
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from koordlet.daemon.cli import parse_args
from koordlet.daemon.logs import configure_logging
from koordlet.orm.manager import AdmissionError
from koordlet.orm.module import OrmModule
from koordlet.statesinformer.api import StaticStates
from koordlet.statesinformer.model import NodeInfo
from koordlet.util.host_facts import HostFacts
from system.host import Host
from tests.koordlet.orm.test_module import dedicated_pod


def module_for(root: Path, states: StaticStates) -> OrmModule:
    config = parse_args(["--state-dir", str(root / "state"), "--topology-policy-name", "single-numa-node",
                         "--reserved-cpus", "0", "--pod-resources-server-endpoint",
                         "unix:" + str(root / "pr.sock"), "--qrm-socket-dirs", str(root / "qrm")])
    return OrmModule(config, HostFacts(Host.under(root / "machine")), states)


async def serve(root: Path) -> None:
    module = module_for(root, StaticStates(NodeInfo("n")))
    await module.start()
    reader = asyncio.StreamReader()
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := (await reader.readline()).decode().split():
        verb, uid = line
        if verb == "add":
            try:
                rows = await module.admit_pod(dedicated_pod(uid))
                print("ok", uid, ",".join(r.result for r in rows), flush=True)
            except AdmissionError:
                print("rejected", uid, "-", flush=True)
        else:
            await module.orm.remove_pod(uid)
            print("gone", uid, "-", flush=True)
    await module.stop()


async def dump(root: Path, live: list[str]) -> None:
    module = module_for(root, StaticStates(NodeInfo("n"), [dedicated_pod(uid) for uid in live]))
    await module.start()
    # printed before the loop runs anything else: the checkpoint as reconciled at start,
    # not yet any new admission of the live pods
    print(json.dumps({e.pod_uid: e.result for e in module.allocations.entries()}), flush=True)
    await module.stop()


if __name__ == "__main__":
    configure_logging("info", "json", sys.stderr)  # stdout carries the protocol
    root = Path(sys.argv[1])
    if sys.argv[2] == "serve":
        asyncio.run(serve(root))
    else:
        asyncio.run(dump(root, sys.argv[3:]))
