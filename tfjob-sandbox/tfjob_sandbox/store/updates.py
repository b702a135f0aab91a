"""Updating objects: PUT, PATCH and in-process edits, through one update path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfjob_sandbox.api.errors import ApiError, invalid
from tfjob_sandbox.api.resource_types import (
    EVENTS_V1,
    JOBS,
    PODS,
    ResourceType,
    storage_type,
)
from tfjob_sandbox.store import builtin_admission, job_admission
from tfjob_sandbox.store.deletion import ObjectDeletion
from tfjob_sandbox.store.event_shapes import events_v1_to_core
from tfjob_sandbox.store.json_objects import (
    check_field_validation,
    check_type_meta,
    check_uid,
    clone,
    conflict,
    meta_of,
    pod_is_running,
    without_keys,
)
from tfjob_sandbox.store.patching import apply_patch
from tfjob_sandbox.store.store_core import Warnings

_IMMUTABLE_METADATA = ("uid", "name", "namespace", "creationTimestamp", "generateName")


class ObjectUpdates(ObjectDeletion):
    """``replace``, ``patch`` and ``mutate``, and the update path they share."""

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
        _check_subresource(rt, subresource)
        old_meta = meta_of(old)
        name = old_meta["name"]
        body["apiVersion"], body["kind"] = rt.api_version, rt.kind
        if admission and subresource is None:
            self._run_defaulting(rt, "UPDATE", body, old)
        new = self._incoming(
            rt,
            old,
            body,
            subresource=subresource,
            privileged=privileged,
            field_validation=field_validation,
            warnings=warnings,
        )
        meta = new.setdefault("metadata", {})
        _keep_server_metadata(rt, meta, old_meta, subresource=subresource, privileged=privileged)
        if new == old:
            return clone(self._view(rt)(old))
        if without_keys(new, "metadata", "status") != without_keys(old, "metadata", "status"):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if admission and subresource is None:
            causes = builtin_admission.validate_builtin(rt, new) + self._run_admission(rt, "UPDATE", new, old)
            if rt == JOBS:
                causes = job_admission.validate_job_update(new, old) + causes
            if causes:
                raise invalid(kind=rt.kind, group=rt.group, name=name, causes=causes)
        if dry_run:
            return clone(new)
        self._commit_update(rt, new, old)
        return clone(new)

    def _incoming(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        body: dict[str, Any],
        *,
        subresource: str | None,
        privileged: bool,
        field_validation: str,
        warnings: Warnings | None,
    ) -> dict[str, Any]:
        """The object to store, schema applied: a status write changes only ``.status``, other
        writes keep the stored ``.status`` where the type has a status subresource."""
        if subresource == "status":
            new = clone(without_keys(old, "status"))
            if "status" in body:
                new["status"] = body["status"]
            return self._validate_schema(
                rt, new, field_validation=field_validation, warnings=warnings, status_only=True
            )
        if rt.has_status_subresource and not privileged:
            body.pop("status", None)
            if "status" in old:
                body["status"] = clone(old["status"])
        return self._validate_schema(rt, body, field_validation=field_validation, warnings=warnings)

    def _commit_update(self, rt: ResourceType, new: dict[str, Any], old: dict[str, Any]) -> None:
        """Store ``new`` with a new resourceVersion; a deleting object without finalizers is removed."""
        meta, old_meta = new["metadata"], meta_of(old)
        meta["resourceVersion"] = str(self._next_rv())
        finalizers_released = bool(old_meta.get("finalizers")) and not meta.get("finalizers")
        if meta.get("deletionTimestamp") and finalizers_released and not self._awaits_kubelet(rt, new):
            self._commit(rt, "DELETED", new, old)
            self._after_removal(rt, new)
        else:
            self._commit(rt, "MODIFIED", new, old)

    def _awaits_kubelet(self, rt: ResourceType, obj: dict[str, Any]) -> bool:
        """A gracefully deleted pod stays until the kubelet confirms with a zero-grace delete."""
        return rt == PODS and bool(meta_of(obj).get("deletionGracePeriodSeconds")) and pod_is_running(obj)


def _check_subresource(rt: ResourceType, subresource: str | None) -> None:
    if subresource not in (None, "status"):
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if subresource == "status" and not rt.has_status_subresource:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")


def _keep_server_metadata(
    rt: ResourceType,
    meta: dict[str, Any],
    old_meta: dict[str, Any],
    *,
    subresource: str | None,
    privileged: bool,
) -> None:
    """Server-owned metadata survives an update: identity, generation, resourceVersion and, but for
    privileged in-process writers, the deletion marks; no new finalizer once deletion started."""
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
                name=old_meta["name"],
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
