"""The handlers of resource requests: query options and body in, one ``Store`` call, the response out."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tfjob_sandbox.api.errors import ApiError, status_success
from tfjob_sandbox.api.resource_types import JOBS, ResourceType
from tfjob_sandbox.apiserver import http_common as http
from tfjob_sandbox.apiserver import tables
from tfjob_sandbox.apiserver.routing import RequestInfo
from tfjob_sandbox.store.json_objects import meta_of
from tfjob_sandbox.store.patching import APPLY_PATCH, PATCH_TYPES
from tfjob_sandbox.store.store import DeleteOutcome, Store


def _method_not_allowed() -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


def _namespace(info: RequestInfo) -> str | None:
    return info.namespace or None


async def handle(store: Store, request: web.Request, info: RequestInfo) -> web.StreamResponse:
    """Dispatch a non-streaming resource request (everything but watch and pod logs)."""
    assert info.rt is not None
    rt = info.rt
    query = request.query
    if info.verb == "get":
        if info.subresource not in ("", "status"):
            raise _method_not_allowed()
        obj = store.peek(rt, info.name, namespace=_namespace(info))
        if obj is None:
            obj = store.get(rt, info.name, namespace=_namespace(info))  # raises the 404 with upstream wording
        if tables.wants_table(request.headers.get("Accept", "")) and not info.subresource:
            return http.json_response(_table(rt, [obj], {}, query))
        return http.json_response(obj)
    if info.verb == "list":
        listed = _list(store, rt, info, query)
        if tables.wants_table(request.headers.get("Accept", "")):
            return http.json_response(_table(rt, listed["items"], listed["metadata"], query))
        return http.json_response(listed)
    if info.verb == "create":
        if info.name or info.subresource:
            raise _method_not_allowed()
        return await _create(store, request, info, rt)
    if info.verb == "update":
        return await _replace(store, request, info, rt)
    if info.verb == "patch":
        return await _patch(store, request, info, rt)
    if info.verb == "delete":
        if info.subresource:
            raise _method_not_allowed()
        return await _delete(store, request, info, rt)
    if info.verb == "deletecollection":
        return await _delete_collection(store, request, info, rt)
    raise _method_not_allowed()


def _table(
    rt: ResourceType, items: list[dict[str, Any]], metadata: dict[str, Any], query: Any
) -> dict[str, Any]:
    include = query.get("includeObject") or "Metadata"
    return tables.render_table(rt, items, list_metadata=metadata, include_object=include)


def _list(store: Store, rt: ResourceType, info: RequestInfo, query: Any) -> dict[str, Any]:
    return store.list_view(
        rt,
        namespace=_namespace(info),
        label_selector=query.get("labelSelector", ""),
        field_selector=query.get("fieldSelector", ""),
        limit=http.query_int(query, "limit", minimum=0),
        continue_token=query.get("continue") or None,
    )


async def _create(
    store: Store, request: web.Request, info: RequestInfo, rt: ResourceType
) -> web.StreamResponse:
    validation = http.field_validation(request.query)
    dry_run = http.dry_run(request.query)
    body = await http.read_body(request, kind=rt.kind)
    warnings: list[str] = []
    http.apply_duplicates(body, validation=validation, warnings=warnings)
    created = store.create(
        rt,
        body.value,
        namespace=_namespace(info),
        dry_run=dry_run,
        field_validation=validation,
        warnings=warnings,
    )
    return http.json_response(created, status=201, warnings=warnings)


async def _replace(
    store: Store, request: web.Request, info: RequestInfo, rt: ResourceType
) -> web.StreamResponse:
    if not info.name:
        raise _method_not_allowed()
    validation = http.field_validation(request.query)
    dry_run = http.dry_run(request.query)
    body = await http.read_body(request, kind=rt.kind)
    obj = body.value
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        raise ApiError(400, "BadRequest", f"the object provided is unrecognized (must be of type {rt.kind})")
    body_name = obj["metadata"].get("name")
    if body_name and body_name != info.name:
        raise ApiError(
            400,
            "BadRequest",
            f"the name of the object ({body_name}) does not match the name on the URL ({info.name})",
        )
    body_ns = obj["metadata"].get("namespace")
    if rt.namespaced and body_ns and body_ns != info.namespace:
        raise ApiError(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
        )
    obj["metadata"]["name"] = info.name
    warnings: list[str] = []
    http.apply_duplicates(body, validation=validation, warnings=warnings)
    updated = store.replace(
        rt,
        obj,
        namespace=_namespace(info),
        subresource=info.subresource or None,
        field_validation=validation,
        dry_run=dry_run,
        warnings=warnings,
    )
    return http.json_response(updated, warnings=warnings)


async def _patch(
    store: Store, request: web.Request, info: RequestInfo, rt: ResourceType
) -> web.StreamResponse:
    if not info.name:
        raise _method_not_allowed()
    validation = http.field_validation(request.query)
    dry_run = http.dry_run(request.query)
    body = await http.read_body(request, kind=rt.kind, allow_patch_types=(*PATCH_TYPES, APPLY_PATCH))
    if request.content_type == APPLY_PATCH:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            "server-side apply (application/apply-patch+yaml) is not supported by the sandbox; "
            "use a merge or JSON patch",
        )
    warnings: list[str] = []
    http.apply_duplicates(body, validation=validation, warnings=warnings)
    patched = store.patch(
        rt,
        info.name,
        body.value,
        namespace=_namespace(info),
        patch_type=request.content_type,
        subresource=info.subresource or None,
        field_validation=validation,
        dry_run=dry_run,
        warnings=warnings,
    )
    return http.json_response(patched, warnings=warnings)


async def _delete_options(request: web.Request) -> dict[str, Any]:
    """DeleteOptions from the body (if any) overlaid with the query parameters."""
    options: dict[str, Any] = {}
    if request.can_read_body:
        raw = await request.read()
        if raw.strip():
            body = await _decode_delete_body(request, raw)
            options.update(body)
    query = request.query
    if "gracePeriodSeconds" in query:
        options["gracePeriodSeconds"] = http.query_int(query, "gracePeriodSeconds")
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if http.query_flag(query, "orphanDependents"):
        options["orphanDependents"] = True
    return options


async def _decode_delete_body(request: web.Request, raw: bytes) -> dict[str, Any]:
    import json

    try:
        body = json.loads(raw)
    except ValueError as error:
        raise ApiError(400, "BadRequest", f"invalid DeleteOptions: {error}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "invalid DeleteOptions: not an object")
    return body


#: kube-apiserver's warning when a batch/v1 Job is deleted without a propagation policy.
JOB_ORPHAN_WARNING = (
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background "
    "to remove them or set propagationPolicy=Orphan to suppress this warning"
)


def _propagation(options: dict[str, Any], rt: ResourceType | None = None) -> str:
    policy = options.get("propagationPolicy")
    if policy:
        return str(policy)
    if options.get("orphanDependents"):
        return "Orphan"
    return "Orphan" if rt == JOBS else "Background"  # batch/v1 Jobs orphan their pods by default


def _delete_warnings(options: dict[str, Any], rt: ResourceType) -> list[str]:
    unset = not options.get("propagationPolicy") and "orphanDependents" not in options
    return [JOB_ORPHAN_WARNING] if rt == JOBS and unset else []


async def _delete(
    store: Store, request: web.Request, info: RequestInfo, rt: ResourceType
) -> web.StreamResponse:
    options = await _delete_options(request)
    dry_run = http.dry_run(request.query, options)
    grace = options.get("gracePeriodSeconds")
    outcome = store.delete_outcome(
        rt,
        info.name,
        namespace=_namespace(info),
        propagation=_propagation(options, rt),
        grace_period_seconds=int(grace) if grace is not None else None,
        preconditions=options.get("preconditions"),
        dry_run=dry_run,
    )
    code, body = delete_response(rt, outcome)
    return http.json_response(body, status=code, warnings=_delete_warnings(options, rt))


async def _delete_collection(
    store: Store, request: web.Request, info: RequestInfo, rt: ResourceType
) -> web.StreamResponse:
    options = await _delete_options(request)
    dry_run = http.dry_run(request.query, options)
    grace = options.get("gracePeriodSeconds")
    listed = _list(store, rt, info, request.query)
    deleted = []
    for obj in listed["items"]:
        meta = obj["metadata"]
        try:
            outcome = store.delete_outcome(
                rt,
                meta["name"],
                namespace=meta.get("namespace") or None,
                propagation=_propagation(options, rt),
                grace_period_seconds=int(grace) if grace is not None else None,
                dry_run=dry_run,
            )
        except ApiError as error:
            if error.code == 404:
                continue
            raise
        deleted.append(outcome.obj)
    return http.json_response({**listed, "items": deleted})


def delete_response(rt: ResourceType, outcome: DeleteOutcome) -> tuple[int, dict[str, Any]]:
    """HTTP code and body kube-apiserver returns for a delete of ``rt`` with ``outcome``.

    Pending (graceful or finalizers) → 202 with the object.  Removed → 200 with the object for
    built-in types, a ``Status`` of success for custom resources (as upstream).
    """
    if not outcome.removed:
        return 202, outcome.obj
    if rt.group and rt.group not in ("apiextensions.k8s.io", "events.k8s.io", "batch"):
        meta = meta_of(outcome.obj)
        return 200, status_success(
            details={
                "name": meta.get("name", ""),
                "group": rt.group,
                "kind": rt.plural,
                "uid": meta.get("uid", ""),
            }
        )
    return 200, outcome.obj
