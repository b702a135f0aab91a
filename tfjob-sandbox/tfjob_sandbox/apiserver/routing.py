"""``resolve(...)``: a request's ``RequestInfo`` (verb, group, version, resource, namespace, name)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import Registry, ResourceType

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_WATCH_VALUES = ("true", "1")


@dataclass(frozen=True)
class RequestInfo:
    """The parsed request.  ``rt`` is ``None`` for non-resource paths (discovery, health, admin)."""

    method: str
    path: str
    verb: str
    is_resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    rt: ResourceType | None = None

    @property
    def rbac_resource(self) -> str:
        """``pods``, ``pods/log``, ``tfjobs/status`` — what RBAC rules and fault filters match."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _non_resource(method: str, path: str) -> RequestInfo:
    return RequestInfo(method=method, path=path, verb=method.lower())


def not_served() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def resolve(method: str, path: str, query: Mapping[str, str], registry: Registry) -> RequestInfo:
    """Parse ``path`` into a :class:`RequestInfo`; unknown resources raise 404 like kube-apiserver."""
    parts = [part for part in path.split("/") if part]
    if not parts or parts[0] not in ("api", "apis"):
        return _non_resource(method, path)
    if parts[0] == "api":
        if len(parts) < 3:  # /api, /api/v1 are discovery
            return _non_resource(method, path)
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 4:  # /apis, /apis/<g>, /apis/<g>/<v>
            return _non_resource(method, path)
        group, version, rest = parts[1], parts[2], parts[3:]
    watch_path = rest[0] == "watch"
    if watch_path:
        rest = rest[1:]
        if not rest:
            raise not_served()
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    elif rest[0] == "namespaces" and len(rest) >= 2:
        # /api/v1/namespaces/<name>[/status]: the namespace object itself
        namespace = rest[1]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if len(rest) > 3:
        raise not_served()
    rt = registry.lookup(group, version, resource)
    if rt is None:
        raise not_served()
    if subresource and subresource not in rt.subresources:
        raise not_served()
    if rt.namespaced is False and resource != "namespaces":
        namespace = ""
    verb = _verb(method, name=name, watch=watch_path or query.get("watch", "").lower() in _WATCH_VALUES)
    return RequestInfo(
        method=method,
        path=path,
        verb=verb,
        is_resource_request=True,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
        rt=rt,
    )


def _verb(method: str, *, name: str, watch: bool) -> str:
    if method in ("GET", "HEAD"):
        if watch:
            return "watch"
        return "get" if name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if name else "deletecollection"
    return method.lower()
