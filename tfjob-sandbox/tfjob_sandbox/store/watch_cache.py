"""Watch history per resource and the watchers' queues fed from it, like kube-apiserver's watch cache."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.store.selectors import Selection

WatchEvent = tuple[str, dict[str, Any]]

#: A watcher that falls this many events behind is cut off (kube-apiserver closes slow watchers too).
MAX_PENDING_EVENTS = 100_000

ViewFn = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Change:
    """One committed write to a table, as kept in its history.

    ``obj`` is the object after the write (for DELETED: its final state); ``old`` the object
    before (``None`` for ADDED).  Both are the store's own immutable snapshots.
    """

    rv: int
    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    lines: dict[tuple[str, str], bytes] = field(default_factory=dict)


@dataclass
class Delivery:
    """An event queued for one watcher; the JSON line is built lazily and cached on the change."""

    type: str
    obj: dict[str, Any]
    change: Change | None
    cache_key: tuple[str, str]

    def line(self, view: ViewFn) -> bytes:
        if self.change is None:
            return encode_event(self.type, view(self.obj))
        cached = self.change.lines.get(self.cache_key)
        if cached is None:
            cached = encode_event(self.type, view(self.obj))
            self.change.lines[self.cache_key] = cached
        return cached


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def encode_event(event_type: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


def too_old(requested: int, oldest: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


class History:
    """The bounded change window of one table.  ``floor``: changes with rv <= floor are forgotten."""

    def __init__(self, *, limit: int, floor: int = 0) -> None:
        self.limit = limit
        self.floor = floor
        self.changes: deque[Change] = deque()

    def append(self, change: Change) -> None:
        self.changes.append(change)
        while len(self.changes) > self.limit:
            self.floor = self.changes.popleft().rv

    def expire(self, *, up_to: int) -> None:
        """Forget everything up to ``up_to`` (the expire-history fault, or a restart)."""
        self.changes.clear()
        self.floor = max(self.floor, up_to)

    def since(self, rv: int) -> list[Change]:
        """Changes after ``rv``; raises 410 when part of that range has been forgotten."""
        if rv < self.floor:
            raise too_old(rv, self.floor + 1)
        return [change for change in self.changes if change.rv > rv]


class WatchSubscription:
    """One watcher's ordered event queue; iterate it asynchronously (``async for type, obj in sub``).

    The store offers every committed change of the watched table through :meth:`offer`
    (synchronously, on the loop thread); the subscription applies namespace and selector
    filtering and queues what the watcher should see.
    """

    def __init__(
        self,
        *,
        namespace: str | None,
        selection: Selection,
        view: ViewFn,
        view_key: str,
        bookmark_kind: tuple[str, str],
        current_rv: Callable[[], str],
        on_close: Callable[[WatchSubscription], None],
        allow_bookmarks: bool = False,
    ) -> None:
        self.namespace = namespace
        self.selection = selection
        self.view = view
        self.view_key = view_key
        self.allow_bookmarks = allow_bookmarks
        self._bookmark_kind = bookmark_kind
        self._current_rv = current_rv
        self._on_close = on_close
        self._pending: deque[Delivery] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.close_reason = ""

    # --- feeding (store side) ---------------------------------------------------------------

    def _selected(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and obj.get("metadata", {}).get("namespace") != self.namespace:
            return False
        return self.selection.empty or self.selection.matches(obj)

    def offer(self, change: Change) -> None:
        """Queue ``change`` if this watcher should see it, with the selector-transition rules."""
        if self.closed:
            return
        now_matches = self._selected(change.obj)
        if change.type == "ADDED":
            if now_matches:
                self._push(Delivery("ADDED", change.obj, change, (self.view_key, "ADDED")))
            return
        if change.type == "DELETED":
            if now_matches:
                self._push(Delivery("DELETED", change.obj, change, (self.view_key, "DELETED")))
            return
        was_matching = self._selected(change.old) if not self.selection.empty else now_matches
        if now_matches and was_matching:
            self._push(Delivery("MODIFIED", change.obj, change, (self.view_key, "MODIFIED")))
        elif now_matches:
            self._push(Delivery("ADDED", change.obj, change, (self.view_key, "ADDED")))
        elif was_matching and change.old is not None:
            # Left the selection: the watcher sees the old object deleted at this change's RV.
            gone = {**change.old, "metadata": {**change.old["metadata"], "resourceVersion": str(change.rv)}}
            self._push(Delivery("DELETED", gone, change, (self.view_key, "DELETED-left")))

    def push_initial(self, obj: dict[str, Any]) -> None:
        """A synthetic ADDED for an object that existed when the watch started."""
        self._push(Delivery("ADDED", obj, None, (self.view_key, "ADDED")))

    def push_error(self, error: ApiError) -> None:
        """Queue an ERROR event with ``error``'s Status, then end the stream."""
        self._push(Delivery("ERROR", error.to_status(), None, (self.view_key, "ERROR")))
        self.closed = True
        self.close_reason = error.message
        self._on_close(self)

    def _push(self, delivery: Delivery) -> None:
        if len(self._pending) >= MAX_PENDING_EVENTS:
            self.close("watcher fell too far behind")
            return
        self._pending.append(delivery)
        self._wake_consumer()

    def _wake_consumer(self) -> None:
        if self._waiter is not None:
            _wake(self._waiter)

    def close(self, reason: str = "closed") -> None:
        """End the stream after whatever is already queued (used for drop-watch faults and shutdown)."""
        if not self.closed:
            self.closed = True
            self.close_reason = reason
            self._on_close(self)
        self._wake_consumer()

    # --- consuming (HTTP side) ---------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """No queued events: a bookmark now would be truthful."""
        return not self._pending

    async def next_batch(self, timeout: float | None = None) -> list[Delivery] | None:
        """Every queued event (waiting up to ``timeout`` for one); ``None`` on timeout.

        Raises StopAsyncIteration once the subscription is closed and drained.  Handing out the
        whole backlog lets the HTTP layer write many events with one socket write.
        """
        if not self._pending:
            if self.closed:
                raise StopAsyncIteration
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiter = waiter
            timer = loop.call_later(timeout, _wake, waiter) if timeout is not None else None
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
            if not self._pending:
                if self.closed:
                    raise StopAsyncIteration
                return None
        batch = list(self._pending)
        self._pending.clear()
        return batch

    async def next_delivery(self, timeout: float | None = None) -> Delivery | None:
        """The next queued event; ``None`` if ``timeout`` passes first; StopAsyncIteration at the end."""
        if not self._pending:
            batch = await self.next_batch(timeout)
            if batch is None:
                return None
            self._pending.extendleft(reversed(batch))
        return self._pending.popleft()

    def bookmark(self) -> WatchEvent:
        """A BOOKMARK carrying the store's current resourceVersion (valid when :attr:`idle`)."""
        api_version, kind = self._bookmark_kind
        return "BOOKMARK", {
            "kind": kind,
            "apiVersion": api_version,
            "metadata": {"resourceVersion": self._current_rv()},
        }

    def bookmark_line(self) -> bytes:
        event_type, obj = self.bookmark()
        return encode_event(event_type, obj)

    def __aiter__(self) -> WatchSubscription:
        return self

    async def __anext__(self) -> WatchEvent:
        delivery = await self.next_delivery()
        assert delivery is not None
        return delivery.type, json.loads(json.dumps(self.view(delivery.obj)))
