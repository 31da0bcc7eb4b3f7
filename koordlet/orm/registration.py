"""The Registration service QRM plugins call: resourceplugin.v1alpha1.Registration/Register
on <qrm socket dir>/kubelet.sock. A valid request makes the ORM dial the plugin at
<socket dir>/<endpoint>; the newest registration for a resource name wins."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc
import structlog

from koordlet.orm.plugin_codec import SUPPORTED_VERSIONS
from koordlet.orm.plugin_endpoint import PluginEndpoint
from koordlet.server.grpc_unix import serve_unix
from proto.k8s.resourceplugin.v1alpha1 import api_pb2 as pb
from proto.k8s.resourceplugin.v1alpha1 import api_pb2_grpc as pb_grpc

log = structlog.get_logger(__name__)

REGISTRATION_SOCKET = "kubelet.sock"

OnRegistered = Callable[[PluginEndpoint], Awaitable[None]]


def validate_registration(request: pb.RegisterRequest) -> str | None:
    """Why a registration is refused, or None when it is acceptable (pure)."""
    if request.version not in SUPPORTED_VERSIONS:
        return "unsupported API version %r (supported: %s)" % (request.version, ", ".join(SUPPORTED_VERSIONS))
    if not request.resource_name:
        return "empty resource_name"
    endpoint = request.endpoint
    if not endpoint or "/" in endpoint or endpoint in (".", "..") or endpoint == REGISTRATION_SOCKET:
        return "endpoint %r must be a socket file name inside the socket dir" % endpoint
    return None


class RegistrationServicer(pb_grpc.RegistrationServicer):
    def __init__(self, socket_dir: Path, on_registered: OnRegistered) -> None:
        self._dir = socket_dir
        self._on_registered = on_registered

    async def Register(self, request: pb.RegisterRequest, context: grpc.aio.ServicerContext) -> pb.Empty:
        problem = validate_registration(request)
        if problem is not None:
            log.warning("orm_plugin_registration_refused", resource=request.resource_name, reason=problem)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        socket = self._dir / request.endpoint
        try:
            endpoint = await PluginEndpoint.dial(request.resource_name, socket, request.options)
        except (TimeoutError, grpc.aio.AioRpcError) as exc:
            log.warning("orm_plugin_dial_failed", resource=request.resource_name, socket=str(socket), error=repr(exc))
            await context.abort(grpc.StatusCode.UNAVAILABLE,
                                "cannot dial resource plugin %s at %s" % (request.resource_name, socket))
        await self._on_registered(endpoint)
        log.info("orm_plugin_registered", resource=request.resource_name, socket=str(socket))
        return pb.Empty()


async def start_registration_server(socket_dir: Path, on_registered: OnRegistered) -> grpc.aio.Server:
    server = grpc.aio.server()
    pb_grpc.add_RegistrationServicer_to_server(RegistrationServicer(socket_dir, on_registered), server)
    await serve_unix(server, socket_dir / REGISTRATION_SOCKET)
    return server
