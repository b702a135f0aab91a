"""The sandbox cluster's object store: the single write path every API call and controller goes through."""

from __future__ import annotations

import builtins
import logging
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import (
    NAMESPACES,
    Registry,
    ResourceType,
    StorageKey,
    storage_key,
)
from tfjob_sandbox.store import builtin_admission
from tfjob_sandbox.store.creation import ObjectCreation
from tfjob_sandbox.store.json_objects import (
    clone,
    format_time,
    sort_key,
    utcnow,
)
from tfjob_sandbox.store.ownership import OwnerIndex
from tfjob_sandbox.store.selectors import Selection
from tfjob_sandbox.store.store_core import (
    AdmissionFn,
    DefaultingFn,
    DeleteOutcome,
    Listener,
    Objects,
    ObjectTable,
    ObjectValidator,
    Types,
)
from tfjob_sandbox.store.updates import ObjectUpdates
from tfjob_sandbox.store.watch_cache import WatchEvent, WatchSubscription

log = logging.getLogger(__name__)

__all__ = [
    "ApiError",
    "DeleteOutcome",
    "Store",
    "WatchEvent",
    "WatchSubscription",
    "clone",
    "format_time",
    "utcnow",
]


class Store(ObjectUpdates, ObjectCreation):
    """In-memory Kubernetes object store with watch history; every method runs on the event-loop thread.

    :param clock: returns the current time (timezone-aware UTC); injected so tests can pin it.
    :param history_limit: changes kept per resource for watch resumption; older resumes get 410.
    :param registry: the types served over HTTP (built-ins plus TFJobs by default); the store itself
        accepts any :class:`ResourceType`, so in-process controllers work whatever is served.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], datetime] = utcnow,
        history_limit: int = 10_000,
        registry: Registry | None = None,
    ) -> None:
        self.clock = clock
        self.history_limit = history_limit
        self.registry = registry if registry is not None else Registry.with_builtins()
        self._rv = 0
        self._forgotten_up_to = 0
        self._tables: dict[StorageKey, ObjectTable] = {}
        self._listeners: builtins.list[tuple[Listener, bool]] = []
        self._admission: dict[StorageKey, builtins.list[AdmissionFn]] = {}
        self._defaulting: dict[StorageKey, builtins.list[DefaultingFn]] = {}
        self._validators: dict[StorageKey, ObjectValidator] = {}
        self._owners = OwnerIndex()
        self._notifications: deque[tuple[str, ResourceType, dict[str, Any], dict[str, Any] | None]] = deque()
        self._notifying = False
        self._allocate_cluster_ip = builtin_admission.ClusterIPAllocator()
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(NAMESPACES, {"metadata": {"name": name}})

    def watch(
        self,
        rt: ResourceType,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        allow_bookmarks: bool = False,
    ) -> WatchSubscription:
        """Subscribe to changes of ``rt`` (async-iterate the result).

        ``resource_version`` unset or ``"0"``: synthetic ADDED events for the current objects, then
        live changes.  A specific version: every change after it, then live changes; a version
        older than the kept history yields one ERROR event with a 410 Expired Status.
        ``allow_bookmarks`` is recorded for the HTTP layer, which decides when to send them.
        """
        selection = Selection.parse(rt, label_selector=label_selector, field_selector=field_selector)
        table = self._table(rt)
        if not rt.namespaced:
            namespace = None
        view = self._view(rt)
        subscription = WatchSubscription(
            namespace=namespace,
            selection=selection,
            view=view,
            view_key=rt.api_version,
            bookmark_kind=(rt.api_version, rt.kind),
            current_rv=lambda: self.resource_version,
            on_close=table.watchers.discard,
            allow_bookmarks=allow_bookmarks,
        )
        if resource_version in (None, "", "0"):
            for obj in sorted(table.iter(namespace), key=sort_key):
                if selection.empty or selection.matches(obj):
                    subscription.push_initial(obj)
        else:
            try:
                start = int(resource_version)
            except ValueError:
                raise ApiError(
                    400,
                    "BadRequest",
                    f'Invalid value: "{resource_version}": resourceVersion must be an integer',
                ) from None
            try:
                backlog = table.history.since(start)
            except ApiError as error:
                subscription.push_error(error)
                return subscription
            for change in backlog:
                subscription.offer(change)
        table.watchers.add(subscription)
        return subscription

    def close_watches(self, reason: str = "closed") -> int:
        """End every open watch stream (the drop-watches fault, and shutdown); returns how many."""
        closed = 0
        for table in self._tables.values():
            for watcher in list(table.watchers):
                watcher.close(reason)
                closed += 1
        return closed

    def expire_history(self) -> None:
        """Forget all change history: a watch resuming from any earlier resourceVersion gets 410."""
        self._forgotten_up_to = self._rv
        for table in self._tables.values():
            table.history.expire(up_to=self._rv)

    def snapshot(self) -> dict[str, Any]:
        """A JSON-able, consistent snapshot: the resourceVersion counter and every stored object.

        Stored objects are immutable, so the lists share them; serialise the result promptly or
        from another thread, never modify it.
        """
        return {
            "resourceVersion": self._rv,
            "tables": {
                f"{table.rt.group}/{table.rt.version}/{table.rt.plural}": list(table.iter(None))
                for table in self._tables.values()
                if table.count()
            },
        }

    def restore(self, state: dict[str, Any], *, resolve: Callable[[str], ResourceType | None]) -> None:
        """Replace the contents with ``state`` from :meth:`snapshot` (no events; history starts empty).

        ``resolve`` maps a ``group/version/plural`` key to its type (custom resources resolve only
        once their CRD has been restored, so CRDs are loaded first).
        """
        self._tables.clear()
        self._owners.clear()
        self._rv = int(state.get("resourceVersion", 0))
        self._forgotten_up_to = self._rv
        tables: dict[str, Objects] = state.get("tables", {})
        ordered = sorted(tables.items(), key=lambda item: 0 if "customresourcedefinitions" in item[0] else 1)
        for key, objects in ordered:
            rt = resolve(key)
            if rt is None:
                log.warning("sandbox state: dropping %d objects of unknown type %s", len(objects), key)
                continue
            table = self._table(rt)
            for obj in objects:
                meta = obj["metadata"]
                table.put(meta.get("namespace", ""), meta["name"], obj)
                self._owners.update(
                    (storage_key(rt), meta.get("namespace", ""), meta["name"]), new=obj, old=None
                )
                self._notifications.append(("ADDED", table.rt, obj, None))
            table.history.expire(up_to=self._rv)
            # Listeners learn restored objects like an informer's initial list; restored CRDs
            # register their types here, before the custom resources that need them are resolved.
            self._drain_notifications()

    def tables(self) -> Types:
        return [table.rt for table in self._tables.values()]
