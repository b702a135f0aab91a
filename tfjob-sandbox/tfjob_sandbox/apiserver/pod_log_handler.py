"""``GET .../pods/<name>/log``: a container's log, whole or followed (``follow=true``) until the run ends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from aiohttp import web

from tfjob_sandbox.api.resource_types import PODS
from tfjob_sandbox.apiserver import pod_log_rendering
from tfjob_sandbox.apiserver.routing import RequestInfo
from tfjob_sandbox.store.store import Store

LogPathFn = Callable[..., "Path | None"]

FOLLOW_POLL_SECONDS = 0.05
_READ_CHUNK = 1 << 16


class LogStreams:
    """Serves the pod log subresource from the files of a kubelet (or anything with ``log_path``)."""

    def __init__(self, store: Store, log_path: LogPathFn | None) -> None:
        self.store = store
        self.log_path = log_path

    async def serve(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        options = pod_log_rendering.LogOptions.from_query(request.query)
        pod = self.store.get(PODS, info.name, namespace=info.namespace or None)
        container = pod_log_rendering.choose_container(pod, options.container)
        path = (
            self.log_path(info.namespace, info.name, container, previous=options.previous)
            if self.log_path is not None
            else None
        )
        if path is None:
            if options.previous:
                raise pod_log_rendering.previous_missing_error(pod, container)
            raise pod_log_rendering.not_started_error(pod, container)
        now = datetime.now(timezone.utc)
        content = await asyncio.to_thread(path.read_bytes)
        lines = pod_log_rendering.parse_lines(content, fallback_time=pod_log_rendering.file_time(path))
        first = pod_log_rendering.render(lines, options, now=now)
        if not options.follow or options.previous:
            return web.Response(body=first, content_type="text/plain")
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            await response.write(first)
            await self._follow(response, path, info, container, options, offset=len(content), sent=len(first))
            await response.write_eof()
        except (ConnectionResetError, ConnectionError, asyncio.CancelledError):
            pass
        return response

    async def _follow(
        self,
        response: web.StreamResponse,
        path: Path,
        info: RequestInfo,
        container: str,
        options: pod_log_rendering.LogOptions,
        *,
        offset: int,
        sent: int,
    ) -> None:
        pod = self.store.peek(PODS, info.name, namespace=info.namespace or None)
        run = pod_log_rendering.run_identity(pod, container) if pod is not None else (None, None)
        pending = b""
        while True:
            pod = self.store.peek(PODS, info.name, namespace=info.namespace or None)
            finished = pod_log_rendering.container_finished(pod, container, started_run=run)
            chunk = _read_from(path, offset)
            offset += len(chunk)
            pending += chunk
            if finished and not chunk:
                complete, pending = pending, b""
            else:
                cut = pending.rfind(b"\n") + 1
                complete, pending = pending[:cut], pending[cut:]
            if complete:
                stamp = datetime.now(timezone.utc)
                lines = pod_log_rendering.parse_lines(complete, fallback_time=stamp)
                unlimited = pod_log_rendering.LogOptions(
                    container=None,
                    follow=True,
                    previous=False,
                    timestamps=options.timestamps,
                    tail_lines=None,
                    since_seconds=None,
                    since_time=None,
                    limit_bytes=None,
                )
                data = pod_log_rendering.render(lines, unlimited, now=stamp)
                if options.limit_bytes is not None:
                    data = data[: max(0, options.limit_bytes - sent)]
                if data:
                    await response.write(data)
                    sent += len(data)
            if options.limit_bytes is not None and sent >= options.limit_bytes:
                return
            if finished and not chunk and not pending:
                return
            await asyncio.sleep(FOLLOW_POLL_SECONDS)


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            return handle.read(_READ_CHUNK)
    except OSError:
        return b""
