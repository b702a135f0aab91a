"""Deleting objects: finalizers, graceful pod deletion, garbage collection by owner, namespace termination."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from tfjob_sandbox.api.errors import ApiError, invalid
from tfjob_sandbox.api.resource_types import (
    NAMESPACES,
    PODS,
    ResourceType,
    storage_key,
    storage_type,
)
from tfjob_sandbox.store import builtin_admission
from tfjob_sandbox.store.json_objects import (
    check_preconditions,
    clone,
    format_time,
    meta_of,
    pod_is_running,
)
from tfjob_sandbox.store.ownership import Location
from tfjob_sandbox.store.store_core import DeleteOutcome, Entries, StoreCore

log = logging.getLogger(__name__)

FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_FINALIZER = "orphan"
_VALID_PROPAGATION = ("Background", "Foreground", "Orphan")


class ObjectDeletion(StoreCore):
    """``delete`` and what follows a removal: dependents, foreground owners, namespaces."""

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
