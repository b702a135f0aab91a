"""Creating objects: server-filled metadata, generated names, namespaces, admission."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from tfjob_sandbox.api.errors import ApiError, invalid, not_found
from tfjob_sandbox.api.resource_types import (
    EVENTS_V1,
    JOBS,
    NAMESPACES,
    PODS,
    ResourceType,
    storage_type,
)
from tfjob_sandbox.store import builtin_admission, job_admission
from tfjob_sandbox.store.event_shapes import events_v1_to_core
from tfjob_sandbox.store.json_objects import (
    check_field_validation,
    check_type_meta,
    clone,
    meta_of,
    status_details,
)
from tfjob_sandbox.store.store_core import Objects, StoreCore, Warnings

_GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class ObjectCreation(StoreCore):
    """``create`` and its name and namespace rules."""

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
        self._run_defaulting(rt, "CREATE", new, None)
        new = self._validate_schema(rt, new, field_validation=field_validation, warnings=warnings)
        uid = str(uuid.uuid4())
        builtin_admission.apply_create_defaults(rt, new, allocate_ip=self._allocate_cluster_ip)
        causes = name_causes + builtin_admission.validate_builtin(rt, new)
        if rt == JOBS:  # the Job strategy generates its selector from the uid, filled before validation
            new["metadata"]["uid"] = uid
            job_admission.default_job(new)
            causes += job_admission.validate_job(new)
        if not causes:  # admission webhooks only see objects that passed the API server's own validation
            new["metadata"]["name"] = name  # and with generateName resolved, as kube-apiserver's do
            causes = self._run_admission(rt, "CREATE", new, None)
        if causes:
            raise invalid(kind=rt.kind, group=rt.group, name=name, causes=causes)
        meta = new["metadata"]
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        meta["uid"] = uid
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
