"""Example plugin: log every NRI event as one JSON line and change nothing.

    python -m nri.examples.logger --socket /var/run/nri/nri.sock [--name logger --index 99]

When containerd launches it (NRI_PLUGIN_SOCKET set) name, index and socket come
from the environment. `--full` logs whole pods/containers instead of ids.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from typing import Any

import structlog
from google.protobuf.json_format import MessageToDict

from nri.loop import run
from nri.stub.dispatch import RuntimeInfo
from nri.stub.stub import Stub, StubConfig
from nri.transport import DEFAULT_NRI_SOCKET
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

log = structlog.get_logger("nri.examples.logger")


class EventLogger:
    """Defines a handler for every event, so it subscribes to all of them."""

    def __init__(self, full: bool = False) -> None:
        self.full = full

    def _describe(self, message: Any) -> Any:
        if message is None:
            return None
        if self.full:
            return MessageToDict(message, preserving_proto_field_name=True)
        if isinstance(message, api.PodSandbox):
            return {"id": message.id, "name": message.name, "namespace": message.namespace}
        if isinstance(message, api.Container):
            return {"id": message.id, "name": message.name, "pod_sandbox_id": message.pod_sandbox_id}
        return MessageToDict(message, preserving_proto_field_name=True)

    def _log(self, event: str, pod: Any = None, container: Any = None, **extra: Any) -> None:
        log.info(event, pod=self._describe(pod), container=self._describe(container), **extra)

    async def configure(self, config: str, runtime: RuntimeInfo) -> None:
        log.info(
            "Configure",
            runtime=runtime.name,
            runtime_version=runtime.version,
            nri_version=str(runtime.nri_version),
            request_timeout_s=runtime.request_timeout,
        )

    async def synchronize(self, pods: list[api.PodSandbox], containers: list[api.Container]) -> None:
        log.info("Synchronize", pods=[self._describe(p) for p in pods], containers=[self._describe(c) for c in containers])

    async def shutdown(self) -> None:
        log.info("Shutdown")

    async def run_pod_sandbox(self, pod: api.PodSandbox) -> None:
        self._log("RunPodSandbox", pod)

    async def update_pod_sandbox(self, pod: api.PodSandbox, overhead: Any, resources: Any) -> None:
        self._log("UpdatePodSandbox", pod, resources=self._describe(resources))

    async def post_update_pod_sandbox(self, pod: api.PodSandbox) -> None:
        self._log("PostUpdatePodSandbox", pod)

    async def stop_pod_sandbox(self, pod: api.PodSandbox) -> None:
        self._log("StopPodSandbox", pod)

    async def remove_pod_sandbox(self, pod: api.PodSandbox) -> None:
        self._log("RemovePodSandbox", pod)

    async def create_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        self._log("CreateContainer", pod, container)

    async def post_create_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        self._log("PostCreateContainer", pod, container)

    async def start_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        self._log("StartContainer", pod, container)

    async def post_start_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        self._log("PostStartContainer", pod, container)

    async def update_container(self, pod: api.PodSandbox, container: api.Container, resources: Any) -> None:
        self._log("UpdateContainer", pod, container, resources=self._describe(resources))

    async def post_update_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        self._log("PostUpdateContainer", pod, container)

    async def stop_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        self._log("StopContainer", pod, container)

    async def remove_container(self, pod: api.PodSandbox, container: api.Container) -> None:
        self._log("RemoveContainer", pod, container)

    async def validate_container_adjustment(self, request: api.ValidateContainerAdjustmentRequest) -> None:
        self._log("ValidateContainerAdjustment", request.pod, request.container)


def configure_json_logging(stream: Any = sys.stdout) -> None:
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.JSONRenderer(sort_keys=True),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=structlog.PrintLoggerFactory(stream),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nri.examples.logger", description=(__doc__ or "\n").splitlines()[0])
    parser.add_argument("--socket", default=DEFAULT_NRI_SOCKET, help="runtime NRI socket to dial")
    parser.add_argument("--name", default=None, help="plugin name (default: NRI_PLUGIN_NAME or 'logger')")
    parser.add_argument("--index", default=None, help="two-digit plugin index (default: NRI_PLUGIN_IDX or 99)")
    parser.add_argument("--full", action="store_true", help="log whole pods and containers")
    parser.add_argument("--no-uvloop", action="store_true")
    args = parser.parse_args(argv)
    configure_json_logging()
    env = os.environ
    name = args.name if args.name is not None else env.get("NRI_PLUGIN_NAME", "logger")
    index = args.index if args.index is not None else env.get("NRI_PLUGIN_IDX", "99")
    stub = Stub(EventLogger(full=args.full), name=name, index=index, config=StubConfig(socket_path=args.socket))
    run(_serve_until_signalled(stub), prefer_uvloop=not args.no_uvloop)
    return 0


async def _serve_until_signalled(stub: Stub) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, lambda: loop.create_task(stub.stop()))
    await stub.run()
    log.info("stopped")


if __name__ == "__main__":
    sys.exit(main())
