"""The store's tables, commit path, listeners, admission hooks and reads: what every write builds on."""

from __future__ import annotations

import builtins
import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from tfjob_sandbox.api.errors import ApiError, not_found
from tfjob_sandbox.api.resource_types import (
    EVENTS_V1,
    Registry,
    ResourceType,
    StorageKey,
    storage_key,
    storage_type,
)
from tfjob_sandbox.store import builtin_admission
from tfjob_sandbox.store.event_shapes import core_to_events_v1
from tfjob_sandbox.store.json_objects import (
    clone,
    decode_continue,
    encode_continue,
    format_time,
    sort_key,
)
from tfjob_sandbox.store.ownership import Location, OwnerIndex
from tfjob_sandbox.store.selectors import Selection
from tfjob_sandbox.store.watch_cache import Change, History, WatchSubscription

log = logging.getLogger(__name__)

Listener = Callable[[str, ResourceType, dict[str, Any], "dict[str, Any] | None"], None]

AdmissionFn = Callable[[str, dict[str, Any], "dict[str, Any] | None"], list[dict[str, Any]]]

#: Mutating admission: ``fn(operation, obj, old)`` fills defaults into ``obj`` in place.
DefaultingFn = Callable[[str, dict[str, Any], "dict[str, Any] | None"], None]

# Aliases for annotations inside the store's classes, whose ``list`` method shadows the builtin there.
Warnings = list[str]
Objects = list[dict[str, Any]]
Entries = list[Location]
Types = list[ResourceType]


class ObjectValidator(Protocol):
    """Schema handling of one resource (from its CRD): prune/default/validate an incoming object."""

    def admit(
        self,
        obj: dict[str, Any],
        *,
        rt: ResourceType,
        field_validation: str,
        warnings: list[str],
        status_only: bool = False,
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class DeleteOutcome:
    """What a delete did: ``removed`` is False while finalizers or a grace period keep the object."""

    obj: dict[str, Any]
    removed: bool


class ObjectTable:
    """All objects of one storage type, by namespace then name, plus their change history."""

    def __init__(self, rt: ResourceType, *, history_limit: int, floor: int) -> None:
        self.rt = rt
        self.objects: dict[str, dict[str, dict[str, Any]]] = {}
        self.history = History(limit=history_limit, floor=floor)
        self.watchers: set[WatchSubscription] = set()

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(namespace, {}).get(name)

    def put(self, namespace: str, name: str, obj: dict[str, Any]) -> None:
        self.objects.setdefault(namespace, {})[name] = obj

    def remove(self, namespace: str, name: str) -> None:
        bucket = self.objects.get(namespace)
        if bucket is not None:
            bucket.pop(name, None)
            if not bucket:
                del self.objects[namespace]

    def iter(self, namespace: str | None) -> Iterator[dict[str, Any]]:
        if namespace is not None:
            yield from self.objects.get(namespace, {}).values()
        else:
            for bucket in self.objects.values():
                yield from bucket.values()

    def count(self) -> int:
        return sum(len(bucket) for bucket in self.objects.values())


class StoreCore:
    """Bookkeeping, the commit path, registration hooks and reads (``Store.__init__`` sets the state)."""

    clock: Callable[[], datetime]
    history_limit: int
    registry: Registry
    _rv: int
    _forgotten_up_to: int
    _tables: dict[StorageKey, ObjectTable]
    _listeners: builtins.list[tuple[Listener, bool]]
    _admission: dict[StorageKey, builtins.list[AdmissionFn]]
    _defaulting: dict[StorageKey, builtins.list[DefaultingFn]]
    _validators: dict[StorageKey, ObjectValidator]
    _owners: OwnerIndex
    _notifications: deque[tuple[str, ResourceType, dict[str, Any], dict[str, Any] | None]]
    _notifying: bool
    _allocate_cluster_ip: builtin_admission.ClusterIPAllocator

    @property
    def resource_version(self) -> str:
        """The newest resourceVersion handed out (what a list returns as its own version)."""
        return str(self._rv)

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _table(self, rt: ResourceType) -> ObjectTable:
        key = storage_key(rt)
        table = self._tables.get(key)
        if table is None:
            # A table created now has lost no history, unless everything before a restore or an
            # expire-history fault counts as forgotten.
            table = self._tables[key] = ObjectTable(
                storage_type(rt), history_limit=self.history_limit, floor=self._forgotten_up_to
            )
        return table

    def _now(self) -> str:
        return format_time(self.clock())

    def _not_found(self, rt: ResourceType, name: str) -> ApiError:
        return not_found(rt.qualified_plural, name, group=rt.group, kind=rt.plural)

    def _namespace_of(self, rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "default") if rt.namespaced else ""

    def _existing(self, rt: ResourceType, name: str, namespace: str | None) -> dict[str, Any]:
        obj = self._table(rt).get(self._namespace_of(rt, namespace), name)
        if obj is None:
            raise self._not_found(rt, name)
        return obj

    def _view(self, rt: ResourceType) -> Callable[[dict[str, Any]], dict[str, Any]]:
        if rt == EVENTS_V1:
            return core_to_events_v1
        return _identity

    def add_listener(self, callback: Listener, *, copies: bool = True) -> None:
        """``callback(event_type, rt, new_obj, old_obj)`` after every committed write (on the loop thread).

        ``new_obj`` is the object after the write (for DELETED: its final state); ``old_obj`` the
        object before it (``None`` for ADDED).  Both are private copies for the callback, unless
        ``copies=False``: then they are the stored objects themselves, which the callback must
        not modify (for listeners that only look, to save two deep copies per write).
        """
        self._listeners.append((callback, copies))

    def add_admission(self, rt: ResourceType, fn: AdmissionFn) -> None:
        """Validating admission for ``rt``: ``fn(operation, obj, old)`` returns Status causes (422 if any)."""
        self._admission.setdefault(storage_key(rt), []).append(fn)

    def add_defaulting(self, rt: ResourceType, fn: DefaultingFn) -> None:
        """Mutating admission for ``rt`` (a webhook's ``Default``): create and update, before the schema."""
        self._defaulting.setdefault(storage_key(rt), []).append(fn)

    def _run_defaulting(
        self, rt: ResourceType, operation: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        for fn in self._defaulting.get(storage_key(rt), []):
            fn(operation, obj, clone(old) if old is not None else None)

    def set_validator(self, rt: ResourceType, validator: ObjectValidator | None) -> None:
        """Attach (or with ``None`` detach) the schema handling of ``rt`` (done when its CRD changes)."""
        if validator is None:
            self._validators.pop(storage_key(rt), None)
        else:
            self._validators[storage_key(rt)] = validator

    def validator_for(self, rt: ResourceType) -> ObjectValidator | None:
        return self._validators.get(storage_key(rt))

    def _commit(
        self, rt: ResourceType, event_type: str, new: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        """Record a write whose ``new`` already carries its fresh resourceVersion."""
        table = self._table(rt)
        meta = new["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        removed = event_type == "DELETED"
        if removed:
            table.remove(namespace, name)
        else:
            table.put(namespace, name, new)
        self._owners.update((storage_key(rt), namespace, name), new=None if removed else new, old=old)
        change = Change(int(meta["resourceVersion"]), event_type, new, old)
        table.history.append(change)
        for watcher in list(table.watchers):
            watcher.offer(change)
        self._notifications.append((event_type, table.rt, new, old))
        self._drain_notifications()

    def _drain_notifications(self) -> None:
        # Writes made by listeners are queued behind the current one, so every listener sees
        # events in commit order even when callbacks write to the store themselves.
        if self._notifying:
            return
        self._notifying = True
        try:
            while self._notifications:
                event_type, rt, new, old = self._notifications.popleft()
                for listener, copies in list(self._listeners):
                    try:
                        if copies:
                            listener(event_type, rt, clone(new), clone(old) if old is not None else None)
                        else:
                            listener(event_type, rt, new, old)
                    except Exception:
                        log.exception(
                            "sandbox store listener %r failed on %s %s", listener, event_type, rt.plural
                        )
        finally:
            self._notifying = False

    def get(self, rt: ResourceType, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        """The object (a copy); 404 ApiError when absent."""
        return clone(self._view(rt)(self._existing(rt, name, namespace)))

    def peek(self, rt: ResourceType, name: str, *, namespace: str | None = None) -> dict[str, Any] | None:
        """The stored object itself, or ``None`` — read-only, for hot paths that only read or serialise."""
        obj = self._table(rt).get(self._namespace_of(rt, namespace), name)
        return self._view(rt)(obj) if obj is not None else None

    def list(
        self,
        rt: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> dict[str, Any]:
        """A ``<Kind>List`` with ``metadata.resourceVersion`` (+ ``continue`` if paged); items are copies."""
        return clone(
            self.list_view(
                rt,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=limit,
                continue_token=continue_token,
            )
        )

    def list_view(
        self,
        rt: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> dict[str, Any]:
        """Like :meth:`list` but the items are the stored objects themselves (read-only, for HTTP)."""
        selection = Selection.parse(rt, label_selector=label_selector, field_selector=field_selector)
        table = self._table(rt)
        list_rv, after = self._rv, None
        if continue_token:
            list_rv, after = decode_continue(continue_token)
            if list_rv < table.history.floor:
                raise ApiError(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result. You can "
                    "start a new list without the continue parameter.",
                )
        if not rt.namespaced:
            namespace = None
        pinned_ns = selection.fields.exact("metadata.namespace")
        pinned_name = selection.fields.exact("metadata.name")
        if pinned_name is not None and (namespace is not None or not rt.namespaced or pinned_ns is not None):
            found = table.get(self._namespace_of(rt, namespace or pinned_ns), pinned_name)
            candidates: Objects = [found] if found is not None else []
        else:
            candidates = list(table.iter(namespace if namespace is not None else pinned_ns))
        items = [obj for obj in candidates if selection.empty or selection.matches(obj)]
        items.sort(key=sort_key)
        if after is not None:
            items = [obj for obj in items if sort_key(obj) > after]
        metadata: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if limit is not None and limit > 0 and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            metadata["continue"] = encode_continue(list_rv, sort_key(items[-1]))
            metadata["remainingItemCount"] = remaining
        view = self._view(rt)
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": metadata,
            "items": [view(obj) for obj in items] if view is not _identity else items,
        }

    def count(self, rt: ResourceType) -> int:
        return self._table(rt).count()

    def _validate_schema(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        *,
        field_validation: str,
        warnings: Warnings | None,
        status_only: bool = False,
    ) -> dict[str, Any]:
        validator = self._validators.get(storage_key(rt))
        if validator is None:
            return obj
        sink: Warnings = warnings if warnings is not None else []
        return validator.admit(
            obj, rt=rt, field_validation=field_validation, warnings=sink, status_only=status_only
        )

    def _run_admission(
        self, rt: ResourceType, operation: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> Objects:
        causes: Objects = []
        for fn in self._admission.get(storage_key(rt), []):
            causes.extend(fn(operation, clone(obj), clone(old) if old is not None else None))
        return causes


def _identity(obj: dict[str, Any]) -> dict[str, Any]:
    return obj
