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

import builtins
import logging
import secrets
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

from tfjob_sandbox.api.errors import ApiError, invalid, not_found
from tfjob_sandbox.api.resource_types import (
    EVENTS_V1,
    NAMESPACES,
    PODS,
    Registry,
    ResourceType,
    StorageKey,
    storage_key,
    storage_type,
)
from tfjob_sandbox.store import builtin_admission
from tfjob_sandbox.store.event_shapes import core_to_events_v1, events_v1_to_core
from tfjob_sandbox.store.json_objects import (
    check_field_validation,
    check_preconditions,
    check_type_meta,
    check_uid,
    clone,
    conflict,
    decode_continue,
    encode_continue,
    format_time,
    meta_of,
    pod_is_running,
    sort_key,
    status_details,
    utcnow,
    without_keys,
)
from tfjob_sandbox.store.ownership import Location, OwnerIndex
from tfjob_sandbox.store.patching import apply_patch
from tfjob_sandbox.store.selectors import Selection
from tfjob_sandbox.store.watch_cache import Change, History, WatchEvent, WatchSubscription

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

log = logging.getLogger(__name__)

Listener = Callable[[str, ResourceType, dict[str, Any], "dict[str, Any] | None"], None]
AdmissionFn = Callable[[str, dict[str, Any], "dict[str, Any] | None"], list[dict[str, Any]]]
# Aliases for annotations inside Store, whose ``list`` method shadows the builtin there.
Warnings = list[str]
Objects = list[dict[str, Any]]
Entries = list[Location]
Types = list[ResourceType]

FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_FINALIZER = "orphan"
_GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_IMMUTABLE_METADATA = ("uid", "name", "namespace", "creationTimestamp", "generateName")
_VALID_PROPAGATION = ("Background", "Foreground", "Orphan")


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
        self._listeners: builtins.list[tuple[Listener, bool]] = []
        self._admission: dict[StorageKey, builtins.list[AdmissionFn]] = {}
        self._validators: dict[StorageKey, ObjectValidator] = {}
        self._owners = OwnerIndex()
        self._notifications: deque[tuple[str, ResourceType, dict[str, Any], dict[str, Any] | None]] = deque()
        self._notifying = False
        self._allocate_cluster_ip = builtin_admission.ClusterIPAllocator()
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
        check_field_validation(field_validation)
        if rt == EVENTS_V1:
            obj = events_v1_to_core(obj)
            rt = storage_type(rt)
        check_type_meta(rt, obj)
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
                details=status_details(rt, name),
            )
        if rt.has_status_subresource and rt not in (NAMESPACES,) and rt != PODS:
            new.pop("status", None)
        new = self._validate_schema(rt, new, field_validation=field_validation, warnings=warnings)
        builtin_admission.apply_create_defaults(rt, new, allocate_ip=self._allocate_cluster_ip)
        causes = name_causes + builtin_admission.validate_builtin(rt, new)
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
        if meta_of(namespace_obj).get("deletionTimestamp"):
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
            return "", [builtin_admission.required("metadata.name", "name or generateName is required")]
        if not isinstance(name, str):
            raise ApiError(400, "BadRequest", "metadata.name must be a string")
        return name, list(builtin_admission.validate_name(rt, name))

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
        check_field_validation(field_validation)
        if rt == EVENTS_V1:
            obj = events_v1_to_core(obj)
            rt = storage_type(rt)
        name = obj["metadata"].get("name")
        if not name:
            raise ApiError(400, "BadRequest", "name is required for an update")
        old = self._existing(rt, str(name), namespace if rt.namespaced else None)
        body = clone(obj)
        check_type_meta(rt, body)
        wanted_rv = body["metadata"].get("resourceVersion")
        if not wanted_rv and rt.group and subresource is None:
            raise invalid(
                kind=rt.kind,
                group=rt.group,
                name=str(name),
                causes=[
                    builtin_admission.invalid_value(
                        "metadata.resourceVersion", 0, "must be specified for an update"
                    )
                ],
            )
        if wanted_rv and wanted_rv != meta_of(old)["resourceVersion"]:
            raise conflict(rt, str(name))
        check_uid(body, old)
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
        check_field_validation(field_validation)
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
        if wanted_rv and wanted_rv != meta_of(old)["resourceVersion"]:
            raise conflict(rt, name)
        if patched["metadata"].get("name", name) != name:
            raise ApiError(
                400,
                "BadRequest",
                f"the name of the object ({patched['metadata'].get('name')}) "
                f"does not match the name on the URL ({name})",
            )
        check_uid(patched, old)
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
        old_meta = meta_of(old)
        name = old_meta["name"]
        body["apiVersion"], body["kind"] = rt.api_version, rt.kind
        if subresource == "status":
            new = clone(without_keys(old, "status"))
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
                        builtin_admission.cause(
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
        if without_keys(new, "metadata", "status") != without_keys(old, "metadata", "status"):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if admission and subresource is None:
            causes = builtin_admission.validate_builtin(rt, new) + self._run_admission(rt, "UPDATE", new, old)
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
        return rt == PODS and bool(meta_of(obj).get("deletionGracePeriodSeconds")) and pod_is_running(obj)

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
                    builtin_admission.cause(
                        "FieldValueNotSupported",
                        "propagationPolicy",
                        f'Unsupported value: "{propagation}": supported values: '
                        '"Foreground", "Background", "Orphan"',
                    )
                ],
            )
        if grace_period_seconds is not None and grace_period_seconds < 0:
            grace_period_seconds = 0
        check_preconditions(preconditions, old)
        if dry_run:
            return DeleteOutcome(view(old), False)
        meta = meta_of(old)
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
        meta = meta_of(pod)
        if grace is None:
            grace = int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30) or 0)
        if grace <= 0 or not pod_is_running(pod):
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
        meta = meta_of(obj)
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
        return self._owners.dependents_of(uid)

    def _lookup_entry(self, entry: Location) -> tuple[ResourceType, dict[str, Any]] | None:
        key, namespace, name = entry
        table = self._tables.get(key)
        obj = table.get(namespace, name) if table else None
        return (table.rt, obj) if table is not None and obj is not None else None

    def _collect_dependent(self, entry: Location, owner_uid: str) -> None:
        """The owner ``owner_uid`` is gone: delete the dependent unless another owner still exists."""
        found = self._lookup_entry(entry)
        if found is None:
            return
        rt, obj = found
        refs = meta_of(obj).get("ownerReferences") or []
        if any(ref.get("uid") != owner_uid and self._owners.exists(ref.get("uid", "")) for ref in refs):

            def strip(target: dict[str, Any]) -> None:
                target["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != owner_uid]

            self._mutate_stored(rt, obj, strip)
            return
        self._delete_dependent(entry)

    def _delete_dependent(self, entry: Location) -> None:
        found = self._lookup_entry(entry)
        if found is None:
            return
        rt, obj = found
        meta = meta_of(obj)
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
        location = self._owners.locate(owner_uid)
        if location is None or self._owners.has_dependents(owner_uid):
            return
        found = self._lookup_entry(location)
        if found is None:
            return
        rt, owner = found
        finalizers = meta_of(owner).get("finalizers") or []
        if FOREGROUND_FINALIZER not in finalizers or not meta_of(owner).get("deletionTimestamp"):
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
        name = meta_of(namespace_obj)["name"]
        if not meta_of(namespace_obj).get("deletionTimestamp"):

            def terminate(obj: dict[str, Any]) -> None:
                obj["metadata"]["deletionTimestamp"] = self._now()
                obj["metadata"]["deletionGracePeriodSeconds"] = 0
                obj["status"] = {"phase": "Terminating"}

            namespace_obj = self._mutate_stored(NAMESPACES, namespace_obj, terminate)
            for table in list(self._tables.values()):
                if not table.rt.namespaced:
                    continue
                for obj in list(table.iter(name)):
                    if not meta_of(obj).get("deletionTimestamp") or table.rt == PODS:
                        self._delete_dependent((storage_key(table.rt), name, meta_of(obj)["name"]))
        removed = self._finish_namespace(name)
        return DeleteOutcome(removed or namespace_obj, bool(removed))

    def _finish_namespace(self, name: str) -> dict[str, Any] | None:
        namespace_obj = self._table(NAMESPACES).get("", name)
        if namespace_obj is None or not meta_of(namespace_obj).get("deletionTimestamp"):
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


def _identity(obj: dict[str, Any]) -> dict[str, Any]:
    return obj
