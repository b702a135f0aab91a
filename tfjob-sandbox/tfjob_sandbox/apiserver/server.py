"""``ApiServer``: the aiohttp app that authenticates, routes, injects faults, authorises, serves."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.apiserver import discovery, openapi, resource_handler
from tfjob_sandbox.apiserver.auth import Authenticator
from tfjob_sandbox.apiserver.faults import ApiFaults
from tfjob_sandbox.apiserver.http_common import json_response, status_response
from tfjob_sandbox.apiserver.pod_log_handler import LogPathFn, LogStreams
from tfjob_sandbox.apiserver.request_log import RequestLog
from tfjob_sandbox.apiserver.routing import RequestInfo, not_served, resolve
from tfjob_sandbox.apiserver.watch_handler import WatchStreams
from tfjob_sandbox.store.store import Store

log = logging.getLogger(__name__)

AdminHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Request bodies up to this size are accepted (a TFJob CRD with descriptions is ~0.6 MB as JSON).
MAX_BODY_BYTES = 16 * 1024 * 1024
_HEALTH_PATHS = ("/healthz", "/livez", "/readyz")


class ConnectionResetFault(Exception):
    """Raised after an injected connection reset so nothing else is written to the dead transport."""


class ApiServer:
    """The HTTP front end.  Create it on any thread; :meth:`start` and :meth:`stop` on the loop.

    :param store: the object store to serve.
    :param authenticator: bearer-token check and RBAC.
    :param faults: injected API faults consulted for every request.
    :param log_path: ``log_path(namespace, pod, container, *, previous)`` of the kubelet.
    :param bookmark_interval: seconds of quiet between watch bookmarks (kube-apiserver: 60).
    :param admin_handler: serves ``/sandbox/v1/...`` (admin token only).
    """

    def __init__(
        self,
        store: Store,
        *,
        authenticator: Authenticator,
        faults: ApiFaults,
        log_path: LogPathFn | None = None,
        bookmark_interval: float = 60.0,
        admin_handler: AdminHandler | None = None,
    ) -> None:
        self.store = store
        self.authenticator = authenticator
        self.faults = faults
        self.watches = WatchStreams(store, bookmark_interval=bookmark_interval)
        self.logs = LogStreams(store, log_path)
        self.admin_handler = admin_handler
        self.requests = RequestLog()
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    def application(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def start(self, *, host: str, port: int, ssl_context: ssl.SSLContext | None) -> int:
        """Bind and serve; returns the port (useful with ``port=0``)."""
        runner = web.AppRunner(
            self.application(), handler_cancellation=True, access_log=None, shutdown_timeout=1.0
        )
        await runner.setup()
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        site = web.SockSite(runner, sock, ssl_context=ssl_context)
        await site.start()
        self._runner = runner
        self.port = int(sock.getsockname()[1])
        return self.port

    async def stop(self) -> None:
        """End open watches and log streams, then close the listener and all connections."""
        self.store.close_watches("server shutting down")
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    def drop_watches(self, *, abort: bool = False) -> int:
        """End every open watch: cleanly (as at a timeout) or, with ``abort``, by resetting the connection."""
        if abort:
            return self.watches.abort_all()
        return self.store.close_watches("dropped by a sandbox fault")

    # --- request pipeline -----------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            user = self.authenticator.authenticate(request.headers.get("Authorization"))
            if request.path.startswith("/sandbox/"):
                if not user.is_admin or self.admin_handler is None:
                    raise ApiError(
                        403, "Forbidden", f'forbidden: User "{user.name}" cannot use the sandbox admin API'
                    )
                return await self.admin_handler(request)
            info = resolve(request.method, request.path, request.query, self.store.registry)
            self.requests.record(user=user.name, verb=info.verb, resource=info.rbac_resource)
            await self._inject_faults(request, info)
            self.authenticator.authorize(user, info)
            if not info.is_resource_request:
                return self._non_resource(request, info)
            if info.verb == "watch":
                return await self.watches.serve(request, info)
            if info.subresource == "log":
                if info.verb != "get":
                    raise ApiError(
                        405,
                        "MethodNotAllowed",
                        "the server does not allow this method on the requested resource",
                    )
                return await self.logs.serve(request, info)
            return await resource_handler.handle(self.store, request, info)
        except ApiError as error:
            return status_response(error)
        except ConnectionResetFault:
            return web.Response(status=500)  # never sent: the transport is already closed
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception as error:  # a bug in the sandbox: answer like kube-apiserver's panic handler
            log.exception("sandbox API server failed on %s %s", request.method, request.path)
            return status_response(ApiError(500, "InternalError", f"Internal error occurred: {error}"))

    async def _inject_faults(self, request: web.Request, info: RequestInfo) -> None:
        for rule in self.faults.pick(info.verb, info.rbac_resource):
            if rule.action == "latency":
                await asyncio.sleep(rule.latency)
            elif rule.action == "reset":
                if request.transport is not None:
                    request.transport.abort()
                raise ConnectionResetFault()
            else:
                raise rule.error()

    def _non_resource(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        if request.method != "GET":
            raise ApiError(
                405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
            )
        if path in _HEALTH_PATHS:
            return web.Response(text="ok", content_type="text/plain")
        if path == "/version":
            return json_response(discovery.VERSION_INFO)
        registry = self.store.registry
        parts = [part for part in path.split("/") if part]
        document: dict[str, Any] | None = None
        if parts == ["api"]:
            document = discovery.api_versions(request.host)
        elif len(parts) == 2 and parts[0] == "api":
            document = discovery.api_resource_list(registry, "", parts[1])
        elif parts == ["apis"]:
            document = discovery.api_group_list(registry)
        elif len(parts) == 2 and parts[0] == "apis":
            document = discovery.api_group(registry, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            document = discovery.api_resource_list(registry, parts[1], parts[2])
        elif parts == ["openapi", "v3"]:
            document = openapi.root_document(registry)
        elif len(parts) == 5 and parts[:3] == ["openapi", "v3", "apis"]:
            document = openapi.group_version_document(registry, parts[3], parts[4])
        elif len(parts) == 4 and parts[:3] == ["openapi", "v3", "api"]:
            document = openapi.group_version_document(registry, "", parts[3])
        if document is None:
            raise not_served()
        return json_response(document)
