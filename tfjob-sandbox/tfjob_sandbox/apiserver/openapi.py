"""Just enough OpenAPI v3 for kubectl to leave field validation to the server (operations, no schemas)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tfjob_sandbox.api.resource_types import Registry, ResourceType

_WRITE_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _parameters(names: tuple[str, ...]) -> list[dict[str, Any]]:
    return [
        {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}} for name in names
    ]


def _operation(rt: ResourceType, operation_id: str, *, writes: bool) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "parameters": _parameters(_WRITE_PARAMETERS) if writes else [],
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
    }


def _resource_paths(rt: ResourceType) -> dict[str, Any]:
    prefix = "/" + _gv_path(rt.group, rt.version)
    collection = (
        f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{prefix}/{rt.plural}"
    )
    item = f"{collection}/{{name}}"
    name = rt.kind
    paths: dict[str, Any] = {
        collection: {
            "get": _operation(rt, f"list{name}", writes=False),
            "post": _operation(rt, f"create{name}", writes=True),
        },
        item: {
            "get": _operation(rt, f"read{name}", writes=False),
            "put": _operation(rt, f"replace{name}", writes=True),
            "patch": _operation(rt, f"patch{name}", writes=True),
            "delete": _operation(rt, f"delete{name}", writes=False),
        },
    }
    if rt.has_status_subresource:
        paths[f"{item}/status"] = {
            "get": _operation(rt, f"read{name}Status", writes=False),
            "put": _operation(rt, f"replace{name}Status", writes=True),
            "patch": _operation(rt, f"patch{name}Status", writes=True),
        }
    return paths


def group_version_document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group-version (operations only), or ``None`` if not served."""
    types = registry.in_group_version(group, version)
    if not types:
        return None
    paths: dict[str, Any] = {}
    for rt in sorted(types, key=lambda t: t.plural):
        paths.update(_resource_paths(rt))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (tfjob-provider sandbox)", "version": "v1.31.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def root_document(registry: Registry) -> dict[str, Any]:
    """``/openapi/v3``: where each group-version's document lives (with a content hash, as upstream)."""
    versions = [("", "v1"), *((g, v) for g, vs in registry.group_versions().items() for v in vs)]
    paths: dict[str, Any] = {}
    for group, version in versions:
        document = group_version_document(registry, group, version)
        if document is None:
            continue
        digest = hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32].upper()
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}
