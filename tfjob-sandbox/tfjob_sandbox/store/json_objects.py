"""JSON-object helpers (times, copies, continue tokens) and request checks in kube-apiserver's words."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone
from typing import Any, TypeVar, cast

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import ResourceType

_T = TypeVar("_T")
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


def meta_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def without_keys(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in obj.items() if key not in keys}


def sort_key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


def encode_continue(rv: int, after: tuple[str, str]) -> str:
    raw = json.dumps({"v": "sandbox.1", "rv": rv, "start": list(after)}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        namespace, name = data["start"]
        return int(data["rv"]), (str(namespace), str(name))
    except (ValueError, KeyError, TypeError):
        raise ApiError(
            400, "BadRequest", "continue key is not valid: illegal base64 data or format"
        ) from None


def status_details(rt: ResourceType, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    return details


def conflict(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.qualified_plural} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        details=status_details(rt, name),
    )


def check_uid(body: dict[str, Any], old: dict[str, Any]) -> None:
    wanted = meta_of(body).get("uid")
    actual = meta_of(old).get("uid")
    if wanted and wanted != actual:
        raise ApiError(
            409,
            "Conflict",
            f"Precondition failed: UID in precondition: {wanted}, UID in object meta: {actual}",
        )


def check_preconditions(preconditions: dict[str, Any] | None, old: dict[str, Any]) -> None:
    if not preconditions:
        return
    meta = meta_of(old)
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


def check_type_meta(rt: ResourceType, obj: dict[str, Any]) -> None:
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


def check_field_validation(value: str) -> None:
    if value not in _VALID_FIELD_VALIDATION:
        raise ApiError(
            400,
            "BadRequest",
            f'fieldValidation parameter unsupported: "{value}", must be one of: Ignore, Warn, Strict',
        )


def pod_is_running(pod: dict[str, Any]) -> bool:
    """Bound to a node and not finished: the kubelet must stop it before it can go."""
    node = (pod.get("spec") or {}).get("nodeName")
    phase = (pod.get("status") or {}).get("phase")
    return bool(node) and phase not in ("Succeeded", "Failed")
