"""``WatchStreams``: watch events, bookmarks, 410 ERROR events and timeouts as kube-apiserver streams them."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping

from aiohttp import web

from tfjob_sandbox.apiserver import http_common as http
from tfjob_sandbox.apiserver.routing import RequestInfo
from tfjob_sandbox.store.store import Store
from tfjob_sandbox.store.watch_cache import WatchSubscription

DEFAULT_MIN_REQUEST_TIMEOUT = 1800.0


class WatchStreams:
    """Serves watch requests and remembers the open ones so a fault can cut their connections."""

    def __init__(self, store: Store, *, bookmark_interval: float = 60.0) -> None:
        self.store = store
        self.bookmark_interval = bookmark_interval
        self._open: dict[web.StreamResponse, web.Request] = {}

    @property
    def open_count(self) -> int:
        return len(self._open)

    def abort_all(self) -> int:
        """Reset every open watch connection at the TCP level (the abrupt variant of drop-watches)."""
        aborted = 0
        for response in list(self._open):
            transport = response._req.transport if response._req is not None else None
            if transport is not None:
                transport.abort()
                aborted += 1
        return aborted

    async def serve(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        assert info.rt is not None
        query: Mapping[str, str] = request.query
        field_selector = query.get("fieldSelector", "")
        if info.name:  # GET .../pods/<name>?watch=true watches one object
            name_term = f"metadata.name={info.name}"
            field_selector = f"{field_selector},{name_term}" if field_selector else name_term
        timeout = http.query_int(query, "timeoutSeconds", minimum=0)
        seconds = float(timeout) if timeout else DEFAULT_MIN_REQUEST_TIMEOUT * (1 + random.random())
        subscription = self.store.watch(
            info.rt,
            namespace=info.namespace or None,
            resource_version=query.get("resourceVersion") or None,
            label_selector=query.get("labelSelector", ""),
            field_selector=field_selector,
            allow_bookmarks=http.query_flag(query, "allowWatchBookmarks"),
        )
        response = web.StreamResponse(status=200, headers={"Content-Type": http.JSON_CONTENT_TYPE})
        response.enable_chunked_encoding()
        self._open[response] = request
        try:
            await response.prepare(request)
            await self._pump(response, subscription, seconds)
            await response.write_eof()
        except (ConnectionResetError, ConnectionError, asyncio.CancelledError):
            pass  # the client went away (or a fault cut it off); nothing left to send
        finally:
            subscription.close("watch ended")
            self._open.pop(response, None)
        return response

    async def _pump(
        self, response: web.StreamResponse, subscription: WatchSubscription, seconds: float
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        next_bookmark = loop.time() + self.bookmark_interval
        bookmarks = subscription.allow_bookmarks
        while True:
            now = loop.time()
            if now >= deadline:
                if bookmarks and subscription.idle:
                    await response.write(subscription.bookmark_line())
                return
            wait = deadline - now
            if bookmarks:
                wait = max(0.0, min(wait, next_bookmark - now))
            try:
                batch = await subscription.next_batch(wait)
            except StopAsyncIteration:
                return
            if batch is not None:
                view = subscription.view
                await response.write(b"".join(delivery.line(view) for delivery in batch))
                continue
            if bookmarks and loop.time() >= next_bookmark and subscription.idle:
                await response.write(subscription.bookmark_line())
                next_bookmark = loop.time() + self.bookmark_interval
