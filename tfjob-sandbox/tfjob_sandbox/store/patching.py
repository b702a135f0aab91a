"""``apply_patch``: JSON merge patch (RFC 7386), JSON patch (RFC 6902); strategic merge applied as merge."""

from __future__ import annotations

import copy
from typing import Any

from tfjob_sandbox.api.errors import ApiError

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH)


def apply_patch(target: dict[str, Any], patch: Any, *, patch_type: str) -> dict[str, Any]:
    """Return a patched copy of ``target``; ``target`` itself is left untouched."""
    if patch_type in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        if not isinstance(patch, dict):
            raise ApiError(
                400, "BadRequest", "json: cannot unmarshal a non-object merge patch into an object"
            )
        result = merge_patch(target, patch)
        assert isinstance(result, dict)
        return result
    if patch_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise ApiError(
                400, "BadRequest", "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
            )
        return json_patch(target, patch)
    raise unsupported_patch_type(patch_type)


def unsupported_patch_type(patch_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f'the body of the request was in an unknown format "{patch_type}" - accepted media types include: '
        f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}",
    )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict[str, Any], operations: list[Any]) -> dict[str, Any]:
    """RFC 6902 add/remove/replace/move/copy/test; a failing operation is a 422 like kube-apiserver's."""
    document: Any = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise ApiError(400, "BadRequest", f"invalid JSON patch operation: {operation!r}")
        document = _apply_operation(document, operation)
    if not isinstance(document, dict):
        raise _patch_failed("the patched document is not an object")
    return document


def _patch_failed(message: str) -> ApiError:
    return ApiError(422, "Invalid", message)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _patch_failed(f"JSON pointer must start with '/': {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _container(document: Any, tokens: list[str], path: str) -> Any:
    node = document
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise _patch_failed(f"doc is missing path: {path!r}: missing value")
    return node


def _get(document: Any, path: str) -> Any:
    return _container(document, _pointer(path), path)


def _apply_operation(document: Any, operation: dict[str, Any]) -> Any:
    op, path = operation["op"], operation["path"]
    if op == "test":
        if _get(document, path) != operation.get("value"):
            raise _patch_failed(f"testing value {path} failed: test failed")
        return document
    if op in ("move", "copy"):
        source = operation.get("from")
        if not isinstance(source, str):
            raise _patch_failed(f"{op} operation needs 'from'")
        value = copy.deepcopy(_get(document, source))
        if op == "move":
            document = _remove(document, source)
        return _add(document, path, value)
    if op == "remove":
        return _remove(document, path)
    if "value" not in operation:
        raise _patch_failed(f"{op} operation does not apply: missing 'value'")
    if op == "add":
        return _add(document, path, copy.deepcopy(operation["value"]))
    if op == "replace":
        _get(document, path)
        return _add(_remove(document, path), path, copy.deepcopy(operation["value"]), replacing=True)
    raise _patch_failed(f"unexpected kind of JSON patch operation: {op!r}")


def _add(document: Any, path: str, value: Any, *, replacing: bool = False) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _container(document, tokens[:-1], path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise _patch_failed(f"add operation does not apply: doc is missing path: {path!r}")
    else:
        raise _patch_failed(f"add operation does not apply: doc is missing path: {path!r}")
    return document


def _remove(document: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        raise _patch_failed("cannot remove the whole document")
    parent = _container(document, tokens[:-1], path)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise _patch_failed(f"remove operation does not apply: doc is missing path: {path!r}")
    return document
