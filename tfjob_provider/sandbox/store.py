"""The sandbox cluster's object store: the single write path every API call and controller goes through.

It plays the part of kube-apiserver's registry plus etcd: one monotonic resourceVersion counter
for all objects, server-filled metadata (uid, generation, creationTimestamp, generateName),
optimistic concurrency, status subresources, finalizers, graceful pod deletion, ownerReference
garbage collection (Background / Foreground / Orphan), namespace termination, admission hooks,
and a per-table change history that watches are served from.

All methods are synchronous and must run on the sandbox's event-loop thread; nothing here blocks
or awaits.  Stored objects are never modified in place (every write stores a new dict), so the
history, watch queues and snapshots can share them safely; dicts handed to callers are copies.
"""

from __future__ import annotations

import base64
import builtins
import json
import logging
import secrets
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol, TypeVar, cast

from tfjob_provider.sandbox import builtin_types
from tfjob_provider.sandbox.errors import ApiError, invalid, not_found, status_success
from tfjob_provider.sandbox.event_shapes import core_to_events_v1, events_v1_to_core
from tfjob_provider.sandbox.patching import apply_patch
from tfjob_provider.sandbox.resources import (
    EVENTS_V1,
    NAMESPACES,
    PODS,
    Registry,
    ResourceType,
    StorageKey,
    storage_key,
    storage_type,
)
from tfjob_provider.sandbox.selectors import Selection
from tfjob_provider.sandbox.watching import Change, History, WatchEvent, WatchSubscription

__all__ = ["ApiError", "DeleteOutcome", "Store", "WatchEvent", "WatchSubscription", "format_time", "utcnow"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

Listener = Callable[[str, ResourceType, dict[str, Any], "dict[str, Any] | None"], None]
AdmissionFn = Callable[[str, dict[str, Any], "dict[str, Any] | None"], list[dict[str, Any]]]
# Aliases for annotations inside Store, whose ``list`` method shadows the builtin there.
Warnings = list[str]
Objects = list[dict[str, Any]]
Entries = list[tuple[StorageKey, str, str]]
Types = list[ResourceType]

FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_FINALIZER = "orphan"
_GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_IMMUTABLE_METADATA = ("uid", "name", "namespace", "creationTimestamp", "generateName")
_VALID_PROPAGATION = ("Background", "Foreground", "Orphan")
_VALID_FIELD_VALIDATION = ("Strict", "Warn", "Ignore")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def format_time(moment: datetime) -> str:
    """RFC 3339 with second precision and a ``Z`` suffix, as metav1.Time serialises."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def clone(value: _T) -> _T:
    """Deep copy of a JSON-shaped value (much faster than ``copy.deepcopy`` for dicts of lists)."""
    return cast(_T, _clone_json(value))


def _clone_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _clone_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clone_json(item) for item in value]
    return value


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


class _Table:
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


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _body_without(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in obj.items() if key not in keys}


class Store:
    """In-memory Kubernetes object store with watch history (see the module docstring).

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
        self._tables: dict[StorageKey, _Table] = {}
        self._listeners: builtins.list[Listener] = []
        self._admission: dict[StorageKey, builtins.list[AdmissionFn]] = {}
        self._validators: dict[StorageKey, ObjectValidator] = {}
        self._dependents: dict[str, set[tuple[StorageKey, str, str]]] = {}
        self._by_uid: dict[str, tuple[StorageKey, str, str]] = {}
        self._notifications: deque[tuple[str, ResourceType, dict[str, Any], dict[str, Any] | None]] = deque()
        self._notifying = False
        self._allocate_cluster_ip = builtin_types.ClusterIPAllocator()
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(NAMESPACES, {"metadata": {"name": name}})

    # --- bookkeeping ----------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The newest resourceVersion handed out (what a list returns as its own version)."""
        return str(self._rv)

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _table(self, rt: ResourceType) -> _Table:
        key = storage_key(rt)
        table = self._tables.get(key)
        if table is None:
            # A table created now has lost no history, unless everything before a restore or an
            # expire-history fault counts as forgotten.
            table = self._tables[key] = _Table(
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

    # --- registration hooks -------------------------------------------------------------------

    def add_listener(self, callback: Listener) -> None:
        """``callback(event_type, rt, new_obj, old_obj)`` after every committed write (on the loop thread).

        ``new_obj`` is the object after the write (for DELETED: its final state); ``old_obj`` the
        object before it (``None`` for ADDED).  Both are private copies for the callback.
        """
        self._listeners.append(callback)

    def add_admission(self, rt: ResourceType, fn: AdmissionFn) -> None:
        """Validating admission for ``rt``: ``fn(operation, obj, old)`` returns Status causes (422 if any)."""
        self._admission.setdefault(storage_key(rt), []).append(fn)

    def set_validator(self, rt: ResourceType, validator: ObjectValidator | None) -> None:
        """Attach (or with ``None`` detach) the schema handling of ``rt`` (done when its CRD changes)."""
        if validator is None:
            self._validators.pop(storage_key(rt), None)
        else:
            self._validators[storage_key(rt)] = validator

    def validator_for(self, rt: ResourceType) -> ObjectValidator | None:
        return self._validators.get(storage_key(rt))

    # --- commit path --------------------------------------------------------------------------

    def _commit(
        self, rt: ResourceType, event_type: str, new: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        """Record a write whose ``new`` already carries its fresh resourceVersion."""
        table = self._table(rt)
        meta = new["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        if event_type == "DELETED":
            table.remove(namespace, name)
            self._by_uid.pop(meta.get("uid", ""), None)
        else:
            table.put(namespace, name, new)
            self._by_uid[meta["uid"]] = (storage_key(rt), namespace, name)
        self._index_owners(storage_key(rt), namespace, name, new if event_type != "DELETED" else None, old)
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
                for listener in list(self._listeners):
                    try:
                        listener(event_type, rt, clone(new), clone(old) if old is not None else None)
                    except Exception:
                        log.exception(
                            "sandbox store listener %r failed on %s %s", listener, event_type, rt.plural
                        )
        finally:
            self._notifying = False

    def _index_owners(
        self,
        key: StorageKey,
        namespace: str,
        name: str,
        new: dict[str, Any] | None,
        old: dict[str, Any] | None,
    ) -> None:
        before = {ref.get("uid") for ref in _meta(old).get("ownerReferences") or []} if old else set()
        after = {ref.get("uid") for ref in _meta(new).get("ownerReferences") or []} if new else set()
        entry = (key, namespace, name)
        for uid in before - after:
            dependents = self._dependents.get(uid)
            if dependents is not None:
                dependents.discard(entry)
                if not dependents:
                    del self._dependents[uid]
        for uid in after - before:
            if uid:
                self._dependents.setdefault(uid, set()).add(entry)

    # --- create ---------------------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Strict",
        warnings: Warnings | None = None,
    ) -> dict[str, Any]:
        """Create ``obj``; returns the stored object (a copy).  ``warnings`` collects Warning headers."""
        if not isinstance(obj, dict):
            raise ApiError(
                400, "BadRequest", f"the object provided is unrecognized (must be of type {rt.kind})"
            )
        _check_field_validation(field_validation)
        if rt == EVENTS_V1:
            obj = events_v1_to_core(obj)
            rt = storage_type(rt)
        _check_type_meta(rt, obj)
        new = {"apiVersion": rt.api_version, "kind": rt.kind, **clone(obj)}
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind
        meta = new.get("metadata")
        if meta is None:
            meta = new["metadata"] = {}
        elif not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        ns = self._create_namespace(rt, meta, namespace)
        if meta.get("resourceVersion"):
            raise ApiError(500, "InternalError", "resourceVersion should not be set on objects to be created")
        name, name_causes = self._create_name(rt, meta, ns)
        table = self._table(rt)
        if name and table.get(ns, name) is not None:
            raise ApiError(
                409,
                "AlreadyExists",
                f'{rt.qualified_plural} "{name}" already exists',
                details=_details(rt, name),
            )
        if rt.has_status_subresource and rt not in (NAMESPACES,) and rt != PODS:
            new.pop("status", None)
        new = self._validate_schema(rt, new, field_validation=field_validation, warnings=warnings)
        builtin_types.apply_create_defaults(rt, new, allocate_ip=self._allocate_cluster_ip)
        causes = name_causes + builtin_types.validate_builtin(rt, new)
        if not causes:  # admission webhooks only see objects that passed the API server's own validation
            causes = self._run_admission(rt, "CREATE", new, None)
        if causes:
            raise invalid(kind=rt.kind, group=rt.group, name=name, causes=causes)
        meta = new["metadata"]
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self._now()
        meta["generation"] = 1
        for server_only in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(server_only, None)
        if not meta.get("finalizers"):
            meta.pop("finalizers", None)
        if dry_run:
            return clone(new)
        meta["resourceVersion"] = str(self._next_rv())
        self._commit(rt, "ADDED", new, None)
        return clone(new)

    def _create_namespace(self, rt: ResourceType, meta: dict[str, Any], namespace: str | None) -> str:
        if not rt.namespaced:
            return ""
        body_ns = meta.get("namespace")
        if namespace and body_ns and body_ns != namespace:
            raise ApiError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
            )
        ns = namespace or body_ns or "default"
        namespace_obj = self._table(NAMESPACES).get("", ns)
        if namespace_obj is None:
            raise not_found("namespaces", ns, group="", kind="namespaces")
        if _meta(namespace_obj).get("deletionTimestamp"):
            raise ApiError(
                403,
                "Forbidden",
                f'{rt.plural} "{meta.get("name") or meta.get("generateName", "")}" is forbidden: '
                f"unable to create new content in namespace {ns} because it is being terminated",
                details={
                    "name": meta.get("name", ""),
                    "group": rt.group,
                    "kind": rt.plural,
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {ns} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )
        return str(ns)

    def _create_name(self, rt: ResourceType, meta: dict[str, Any], namespace: str) -> tuple[str, Objects]:
        """The name to create under (generateName resolved) and the name's validation causes."""
        name = meta.get("name")
        generate = meta.get("generateName")
        if not name and generate:
            base = str(generate)[:58]
            for _ in range(8):
                candidate = base + "".join(secrets.choice(_GENERATE_NAME_ALPHABET) for _ in range(5))
                if self._table(rt).get(namespace, candidate) is None:
                    name = candidate
                    break
            else:
                raise ApiError(409, "AlreadyExists", f'{rt.qualified_plural} "{base}" already exists')
        if not name:
            return "", [builtin_types.required("metadata.name", "name or generateName is required")]
        if not isinstance(name, str):
            raise ApiError(400, "BadRequest", "metadata.name must be a string")
        return name, list(builtin_types.validate_name(rt, name))

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

    # --- read -----------------------------------------------------------------------------------

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
            list_rv, after = _decode_continue(continue_token)
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
        items.sort(key=_sort_key)
        if after is not None:
            items = [obj for obj in items if _sort_key(obj) > after]
        metadata: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if limit is not None and limit > 0 and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            metadata["continue"] = _encode_continue(list_rv, _sort_key(items[-1]))
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

    # --- update ---------------------------------------------------------------------------------

    def replace(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_validation: str = "Strict",
        dry_run: bool = False,
        warnings: Warnings | None = None,
    ) -> dict[str, Any]:
        """PUT semantics: optimistic concurrency on ``metadata.resourceVersion`` (409 when stale)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            raise ApiError(
                400, "BadRequest", f"the object provided is unrecognized (must be of type {rt.kind})"
            )
        _check_field_validation(field_validation)
        if rt == EVENTS_V1:
            obj = events_v1_to_core(obj)
            rt = storage_type(rt)
        name = obj["metadata"].get("name")
        if not name:
            raise ApiError(400, "BadRequest", "name is required for an update")
        old = self._existing(rt, str(name), namespace if rt.namespaced else None)
        body = clone(obj)
        _check_type_meta(rt, body)
        wanted_rv = body["metadata"].get("resourceVersion")
        if not wanted_rv and rt.group and subresource is None:
            raise invalid(
                kind=rt.kind,
                group=rt.group,
                name=str(name),
                causes=[
                    builtin_types.invalid_value(
                        "metadata.resourceVersion", 0, "must be specified for an update"
                    )
                ],
            )
        if wanted_rv and wanted_rv != _meta(old)["resourceVersion"]:
            raise _conflict(rt, str(name))
        _check_uid(body, old)
        return self._update(
            rt,
            old,
            body,
            subresource=subresource,
            admission=True,
            field_validation=field_validation,
            dry_run=dry_run,
            warnings=warnings,
        )

    def patch(
        self,
        rt: ResourceType,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: str,
        subresource: str | None = None,
        field_validation: str = "Strict",
        dry_run: bool = False,
        warnings: Warnings | None = None,
    ) -> dict[str, Any]:
        """PATCH semantics: merge/JSON/strategic-merge (as merge); stale RV inside the patch → 409."""
        _check_field_validation(field_validation)
        view_rt = rt
        rt = storage_type(rt)
        old = self._existing(rt, name, namespace if rt.namespaced else None)
        view = self._view(view_rt)
        patched = apply_patch(view(old), patch, patch_type=patch_type)
        if view_rt == EVENTS_V1:
            patched = events_v1_to_core(patched)
        if not isinstance(patched.get("metadata"), dict):
            raise ApiError(422, "Invalid", "metadata must be an object")
        wanted_rv = patched["metadata"].get("resourceVersion")
        if wanted_rv and wanted_rv != _meta(old)["resourceVersion"]:
            raise _conflict(rt, name)
        if patched["metadata"].get("name", name) != name:
            raise ApiError(
                400,
                "BadRequest",
                f"the name of the object ({patched['metadata'].get('name')}) "
                f"does not match the name on the URL ({name})",
            )
        _check_uid(patched, old)
        return self._update(
            rt,
            old,
            patched,
            subresource=subresource,
            admission=True,
            field_validation=field_validation,
            dry_run=dry_run,
            warnings=warnings,
        )

    def mutate(
        self,
        rt: ResourceType,
        name: str,
        fn: Callable[[dict[str, Any]], None],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Change an object in process: ``fn`` edits a copy in place.  For controllers and the kubelet.

        No resourceVersion check and no admission; the write still bumps the resourceVersion,
        emits a watch event and notifies listeners (unless nothing changed).  With
        ``subresource="status"`` only ``.status`` is taken from the edited copy; without it every
        change is taken, ``.status`` and deletion metadata included.
        """
        rt = storage_type(rt)
        old = self._existing(rt, name, namespace if rt.namespaced else None)
        edited = clone(old)
        fn(edited)
        if not isinstance(edited.get("metadata"), dict):
            raise ValueError("mutate() callbacks must keep metadata a dict")
        return self._update(
            rt,
            old,
            edited,
            subresource=subresource,
            admission=False,
            field_validation="Ignore",
            privileged=True,
        )

    def _update(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        body: dict[str, Any],
        *,
        subresource: str | None,
        admission: bool,
        field_validation: str,
        privileged: bool = False,
        dry_run: bool = False,
        warnings: Warnings | None = None,
    ) -> dict[str, Any]:
        if subresource not in (None, "status"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if subresource == "status" and not rt.has_status_subresource:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        old_meta = _meta(old)
        name = old_meta["name"]
        body["apiVersion"], body["kind"] = rt.api_version, rt.kind
        if subresource == "status":
            new = clone(_body_without(old, "status"))
            if "status" in body:
                new["status"] = body["status"]
            new = self._validate_schema(
                rt, new, field_validation=field_validation, warnings=warnings, status_only=True
            )
        else:
            new = body
            if rt.has_status_subresource and not privileged:
                new.pop("status", None)
                if "status" in old:
                    new["status"] = clone(old["status"])
            new = self._validate_schema(rt, new, field_validation=field_validation, warnings=warnings)
        meta = new.setdefault("metadata", {})
        if subresource == "status":
            meta.clear()
            meta.update(clone(old_meta))
        for key in _IMMUTABLE_METADATA:
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        if not privileged:
            for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                if key in old_meta:
                    meta[key] = old_meta[key]
                else:
                    meta.pop(key, None)
        meta["generation"] = old_meta.get("generation", 1)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        deleting = bool(old_meta.get("deletionTimestamp"))
        if deleting and not privileged:
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise invalid(
                    kind=rt.kind,
                    group=rt.group,
                    name=name,
                    causes=[
                        builtin_types.cause(
                            "FieldValueForbidden",
                            "metadata.finalizers",
                            "Forbidden: no new finalizers can be added if the object is being deleted",
                        )
                    ],
                )
        if not meta.get("finalizers"):
            meta.pop("finalizers", None)
        if new == old:
            return clone(self._view(rt)(old))
        if _body_without(new, "metadata", "status") != _body_without(old, "metadata", "status"):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if admission and subresource is None:
            causes = builtin_types.validate_builtin(rt, new) + self._run_admission(rt, "UPDATE", new, old)
            if causes:
                raise invalid(kind=rt.kind, group=rt.group, name=name, causes=causes)
        if dry_run:
            return clone(new)
        meta["resourceVersion"] = str(self._next_rv())
        finalizers_released = bool(old_meta.get("finalizers")) and not meta.get("finalizers")
        if meta.get("deletionTimestamp") and finalizers_released and not self._awaits_kubelet(rt, new):
            self._commit(rt, "DELETED", new, old)
            self._after_removal(rt, new)
        else:
            self._commit(rt, "MODIFIED", new, old)
        return clone(new)

    def _awaits_kubelet(self, rt: ResourceType, obj: dict[str, Any]) -> bool:
        """A gracefully deleted pod stays until the kubelet confirms with a zero-grace delete."""
        return rt == PODS and bool(_meta(obj).get("deletionGracePeriodSeconds")) and _pod_is_running(obj)

    # --- delete ---------------------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        name: str,
        *,
        namespace: str | None = None,
        propagation: str = "Background",
        grace_period_seconds: int | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete (or start deleting) an object; returns its final or deletion-marked state (a copy)."""
        return clone(
            self.delete_outcome(
                rt,
                name,
                namespace=namespace,
                propagation=propagation,
                grace_period_seconds=grace_period_seconds,
                preconditions=preconditions,
                dry_run=dry_run,
            ).obj
        )

    def delete_outcome(
        self,
        rt: ResourceType,
        name: str,
        *,
        namespace: str | None = None,
        propagation: str = "Background",
        grace_period_seconds: int | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> DeleteOutcome:
        """:meth:`delete` reporting whether the object is gone (the HTTP layer answers 200 vs 202)."""
        view = self._view(rt)
        rt = storage_type(rt)
        old = self._existing(rt, name, namespace if rt.namespaced else None)
        if propagation not in _VALID_PROPAGATION:
            raise invalid(
                kind="DeleteOptions",
                group="",
                name="",
                causes=[
                    builtin_types.cause(
                        "FieldValueNotSupported",
                        "propagationPolicy",
                        f'Unsupported value: "{propagation}": supported values: '
                        '"Foreground", "Background", "Orphan"',
                    )
                ],
            )
        if grace_period_seconds is not None and grace_period_seconds < 0:
            grace_period_seconds = 0
        _check_preconditions(preconditions, old)
        if dry_run:
            return DeleteOutcome(view(old), False)
        meta = _meta(old)
        if rt == NAMESPACES:
            return self._delete_namespace(old)
        if rt == PODS:
            outcome = self._delete_pod_gracefully(old, grace_period_seconds)
            if outcome is not None:
                return DeleteOutcome(view(outcome.obj), outcome.removed)
        if meta.get("deletionTimestamp"):
            if not meta.get("finalizers"):
                return DeleteOutcome(view(self._remove(rt, old)), True)
            return DeleteOutcome(view(old), False)
        dependents = self._dependent_entries(meta.get("uid", ""))
        if propagation == "Orphan":
            self._orphan_dependents(meta.get("uid", ""), dependents)
        elif propagation == "Foreground" and dependents:
            marked = self._mark_deleting(rt, old, extra_finalizer=FOREGROUND_FINALIZER)
            for entry in dependents:
                self._delete_dependent(entry)
            self._finish_foreground(meta["uid"])
            current = self._table(rt).get(meta.get("namespace", ""), name)
            return DeleteOutcome(view(current or marked), current is None)
        if meta.get("finalizers"):
            return DeleteOutcome(view(self._mark_deleting(rt, old)), False)
        return DeleteOutcome(view(self._remove(rt, old)), True)

    def _delete_pod_gracefully(self, pod: dict[str, Any], grace: int | None) -> DeleteOutcome | None:
        meta = _meta(pod)
        if grace is None:
            grace = int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30) or 0)
        if grace <= 0 or not _pod_is_running(pod):
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds") == 0:
                    return DeleteOutcome(pod, False)

                def mark(obj: dict[str, Any]) -> None:
                    obj["metadata"].setdefault("deletionTimestamp", self._now())
                    obj["metadata"]["deletionGracePeriodSeconds"] = 0

                return DeleteOutcome(self._mutate_stored(PODS, pod, mark), False)
            return None
        current_grace = meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp") and current_grace is not None and current_grace <= grace:
            return DeleteOutcome(pod, False)
        deadline = self.clock().timestamp() + grace

        def mark_graceful(obj: dict[str, Any]) -> None:
            obj["metadata"]["deletionTimestamp"] = format_time(datetime.fromtimestamp(deadline, timezone.utc))
            obj["metadata"]["deletionGracePeriodSeconds"] = grace

        return DeleteOutcome(self._mutate_stored(PODS, pod, mark_graceful), False)

    def _mutate_stored(
        self, rt: ResourceType, old: dict[str, Any], fn: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        new = clone(old)
        fn(new)
        meta = new["metadata"]
        if not old["metadata"].get("deletionTimestamp") and meta.get("deletionTimestamp"):
            meta["generation"] = int(meta.get("generation", 1)) + 1
        meta["resourceVersion"] = str(self._next_rv())
        self._commit(rt, "MODIFIED", new, old)
        return new

    def _mark_deleting(
        self, rt: ResourceType, old: dict[str, Any], *, extra_finalizer: str | None = None
    ) -> dict[str, Any]:
        def mark(obj: dict[str, Any]) -> None:
            meta = obj["metadata"]
            meta.setdefault("deletionTimestamp", self._now())
            meta.setdefault("deletionGracePeriodSeconds", 0)
            if extra_finalizer and extra_finalizer not in (meta.get("finalizers") or []):
                meta["finalizers"] = [*(meta.get("finalizers") or []), extra_finalizer]

        return self._mutate_stored(rt, old, mark)

    def _remove(self, rt: ResourceType, old: dict[str, Any]) -> dict[str, Any]:
        final = dict(old)
        final["metadata"] = {**old["metadata"], "resourceVersion": str(self._next_rv())}
        self._commit(rt, "DELETED", final, old)
        self._after_removal(rt, final)
        return final

    def _after_removal(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        meta = _meta(obj)
        uid = meta.get("uid", "")
        for entry in self._dependent_entries(uid):
            self._collect_dependent(entry, uid)
        for owner in meta.get("ownerReferences") or []:
            self._finish_foreground(owner.get("uid", ""))
        namespace = meta.get("namespace")
        if namespace:
            self._finish_namespace(namespace)

    # --- garbage collection -----------------------------------------------------------------------

    def _dependent_entries(self, uid: str) -> Entries:
        return sorted(self._dependents.get(uid, ()))

    def _lookup_entry(self, entry: tuple[StorageKey, str, str]) -> tuple[ResourceType, dict[str, Any]] | None:
        key, namespace, name = entry
        table = self._tables.get(key)
        obj = table.get(namespace, name) if table else None
        return (table.rt, obj) if table is not None and obj is not None else None

    def _collect_dependent(self, entry: tuple[StorageKey, str, str], owner_uid: str) -> None:
        """The owner ``owner_uid`` is gone: delete the dependent unless another owner still exists."""
        found = self._lookup_entry(entry)
        if found is None:
            return
        rt, obj = found
        refs = _meta(obj).get("ownerReferences") or []
        if any(ref.get("uid") != owner_uid and ref.get("uid") in self._by_uid for ref in refs):

            def strip(target: dict[str, Any]) -> None:
                target["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != owner_uid]

            self._mutate_stored(rt, obj, strip)
            return
        self._delete_dependent(entry)

    def _delete_dependent(self, entry: tuple[StorageKey, str, str]) -> None:
        found = self._lookup_entry(entry)
        if found is None:
            return
        rt, obj = found
        meta = _meta(obj)
        try:
            self.delete_outcome(rt, meta["name"], namespace=meta.get("namespace") or None)
        except ApiError as error:  # pragma: no cover - defensive: GC must never break the owner's delete
            log.warning("garbage collection of %s %s failed: %s", rt.plural, meta.get("name"), error)

    def _orphan_dependents(self, uid: str, dependents: Entries) -> None:
        for entry in dependents:
            found = self._lookup_entry(entry)
            if found is None:
                continue
            rt, obj = found

            def strip(target: dict[str, Any]) -> None:
                refs = [r for r in target["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
                if refs:
                    target["metadata"]["ownerReferences"] = refs
                else:
                    target["metadata"].pop("ownerReferences", None)

            self._mutate_stored(rt, obj, strip)

    def _finish_foreground(self, owner_uid: str) -> None:
        """Drop ``foregroundDeletion`` from an owner whose dependents are all gone (and remove it)."""
        location = self._by_uid.get(owner_uid)
        if location is None or self._dependents.get(owner_uid):
            return
        found = self._lookup_entry(location)
        if found is None:
            return
        rt, owner = found
        finalizers = _meta(owner).get("finalizers") or []
        if FOREGROUND_FINALIZER not in finalizers or not _meta(owner).get("deletionTimestamp"):
            return
        remaining = [f for f in finalizers if f != FOREGROUND_FINALIZER]

        def drop(obj: dict[str, Any]) -> None:
            if remaining:
                obj["metadata"]["finalizers"] = remaining
            else:
                obj["metadata"].pop("finalizers", None)

        if remaining:
            self._mutate_stored(rt, owner, drop)
        else:
            updated = clone(owner)
            drop(updated)
            updated["metadata"]["resourceVersion"] = str(self._next_rv())
            self._commit(rt, "DELETED", updated, owner)
            self._after_removal(rt, updated)

    # --- namespaces -----------------------------------------------------------------------------

    def _delete_namespace(self, namespace_obj: dict[str, Any]) -> DeleteOutcome:
        name = _meta(namespace_obj)["name"]
        if not _meta(namespace_obj).get("deletionTimestamp"):

            def terminate(obj: dict[str, Any]) -> None:
                obj["metadata"]["deletionTimestamp"] = self._now()
                obj["metadata"]["deletionGracePeriodSeconds"] = 0
                obj["status"] = {"phase": "Terminating"}

            namespace_obj = self._mutate_stored(NAMESPACES, namespace_obj, terminate)
            for table in list(self._tables.values()):
                if not table.rt.namespaced:
                    continue
                for obj in list(table.iter(name)):
                    if not _meta(obj).get("deletionTimestamp") or table.rt == PODS:
                        self._delete_dependent((storage_key(table.rt), name, _meta(obj)["name"]))
        removed = self._finish_namespace(name)
        return DeleteOutcome(removed or namespace_obj, bool(removed))

    def _finish_namespace(self, name: str) -> dict[str, Any] | None:
        namespace_obj = self._table(NAMESPACES).get("", name)
        if namespace_obj is None or not _meta(namespace_obj).get("deletionTimestamp"):
            return None
        if any(table.rt.namespaced and table.objects.get(name) for table in self._tables.values()):
            return None
        return self._remove(NAMESPACES, namespace_obj)

    # --- watch ----------------------------------------------------------------------------------

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
            for obj in sorted(table.iter(namespace), key=_sort_key):
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

    # --- persistence ----------------------------------------------------------------------------

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
        self._by_uid.clear()
        self._dependents.clear()
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
                self._by_uid[meta["uid"]] = (storage_key(rt), meta.get("namespace", ""), meta["name"])
                self._index_owners(storage_key(rt), meta.get("namespace", ""), meta["name"], obj, None)
                self._notifications.append(("ADDED", table.rt, obj, None))
            table.history.expire(up_to=self._rv)
            # Listeners learn restored objects like an informer's initial list; restored CRDs
            # register their types here, before the custom resources that need them are resolved.
            self._drain_notifications()

    def tables(self) -> Types:
        return [table.rt for table in self._tables.values()]


def _identity(obj: dict[str, Any]) -> dict[str, Any]:
    return obj


def _sort_key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


def _encode_continue(rv: int, after: tuple[str, str]) -> str:
    raw = json.dumps({"v": "sandbox.1", "rv": rv, "start": list(after)}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        namespace, name = data["start"]
        return int(data["rv"]), (str(namespace), str(name))
    except (ValueError, KeyError, TypeError):
        raise ApiError(
            400, "BadRequest", "continue key is not valid: illegal base64 data or format"
        ) from None


def _details(rt: ResourceType, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    return details


def _conflict(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.qualified_plural} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        details=_details(rt, name),
    )


def _check_uid(body: dict[str, Any], old: dict[str, Any]) -> None:
    wanted = _meta(body).get("uid")
    actual = _meta(old).get("uid")
    if wanted and wanted != actual:
        raise ApiError(
            409,
            "Conflict",
            f"Precondition failed: UID in precondition: {wanted}, UID in object meta: {actual}",
        )


def _check_preconditions(preconditions: dict[str, Any] | None, old: dict[str, Any]) -> None:
    if not preconditions:
        return
    meta = _meta(old)
    uid = preconditions.get("uid")
    if uid and uid != meta.get("uid"):
        raise ApiError(
            409,
            "Conflict",
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}",
        )
    rv = preconditions.get("resourceVersion")
    if rv and rv != meta.get("resourceVersion"):
        raise ApiError(
            409,
            "Conflict",
            f"Precondition failed: ResourceVersion in precondition: {rv}, "
            f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
        )


def _check_type_meta(rt: ResourceType, obj: dict[str, Any]) -> None:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version and api_version != rt.api_version:
        raise ApiError(
            400,
            "BadRequest",
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({rt.api_version})",
        )
    if kind and kind != rt.kind:
        raise ApiError(
            400, "BadRequest", f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
        )


def _check_field_validation(value: str) -> None:
    if value not in _VALID_FIELD_VALIDATION:
        raise ApiError(
            400,
            "BadRequest",
            f'fieldValidation parameter unsupported: "{value}", must be one of: Ignore, Warn, Strict',
        )


def _pod_is_running(pod: dict[str, Any]) -> bool:
    """Bound to a node and not finished: the kubelet must stop it before it can go."""
    node = (pod.get("spec") or {}).get("nodeName")
    phase = (pod.get("status") or {}).get("phase")
    return bool(node) and phase not in ("Succeeded", "Failed")


def delete_response(rt: ResourceType, outcome: DeleteOutcome) -> tuple[int, dict[str, Any]]:
    """HTTP code and body kube-apiserver returns for a delete of ``rt`` with ``outcome``.

    Pending (graceful or finalizers) → 202 with the object.  Removed → 200 with the object for
    built-in types, a ``Status`` of success for custom resources (as upstream).
    """
    if not outcome.removed:
        return 202, outcome.obj
    if rt.group and rt.group not in ("apiextensions.k8s.io", "events.k8s.io"):
        meta = _meta(outcome.obj)
        return 200, status_success(
            details={
                "name": meta.get("name", ""),
                "group": rt.group,
                "kind": rt.plural,
                "uid": meta.get("uid", ""),
            }
        )
    return 200, outcome.obj
