"""HTTP helpers for the handlers: JSON and Status responses, Warning headers, bodies, query options."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from aiohttp import web
from multidict import CIMultiDict

from tfjob_sandbox.api.errors import ApiError

JSON_CONTENT_TYPE = "application/json"
_BODY_TYPES = ("application/json", "application/yaml", "")


def json_response(body: Any, *, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    headers: CIMultiDict[str] = CIMultiDict()
    for text in warnings or ():
        headers.add("Warning", warning_header(text))
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=status,
        content_type=JSON_CONTENT_TYPE,
        headers=headers,
    )


def warning_header(text: str) -> str:
    """``299 - "<text>"`` with Go-style quoting, as kube-apiserver formats warnings."""
    return f"299 - {json.dumps(text)}"


def status_response(error: ApiError) -> web.Response:
    response = json_response(error.to_status(), status=error.code)
    for key, value in error.headers.items():
        response.headers[key] = value
    return response


@dataclass
class DecodedBody:
    """A request body plus the strict-decoding problems (duplicate keys) found while parsing it."""

    value: Any
    duplicates: list[str] = field(default_factory=list)


def _pairs_hook(duplicates: list[str]) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                duplicates.append(f'duplicate field "{key}"')
            result[key] = value
        return result

    return hook


async def read_body(
    request: web.Request, *, kind: str, allow_patch_types: tuple[str, ...] = ()
) -> DecodedBody:
    """Decode a JSON (or YAML) request body; 415 for other media types, 400 for malformed ones."""
    content_type = request.content_type if request.headers.get("Content-Type") else ""
    if allow_patch_types:
        if content_type not in allow_patch_types:
            from tfjob_sandbox.store.patching import unsupported_patch_type

            raise unsupported_patch_type(content_type)
    elif content_type not in _BODY_TYPES:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f'the body of the request was in an unknown format "{content_type}" - accepted media types '
            "include: application/json, application/yaml",
        )
    raw = await request.read()
    if not raw.strip():
        raise ApiError(
            400,
            "BadRequest",
            f"the object provided is unrecognized (must be of type {kind}): "
            "couldn't get version/kind; json parse error: unexpected end of JSON input",
        )
    duplicates: list[str] = []
    try:
        if content_type == "application/yaml":
            value = yaml.safe_load(raw)
        else:
            value = json.loads(raw, object_pairs_hook=_pairs_hook(duplicates))
    except (ValueError, yaml.YAMLError) as error:
        raise ApiError(
            400,
            "BadRequest",
            f"the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; "
            f"json parse error: {error}",
        ) from None
    return DecodedBody(value, duplicates)


def query_flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("true", "1")


def query_int(query: Mapping[str, str], name: str, *, minimum: int | None = None) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "BadRequest", f'invalid value for {name}: "{raw}" is not an integer') from None
    if minimum is not None and value < minimum:
        raise ApiError(
            400, "BadRequest", f"{name}: Invalid value: {value}: must be greater than or equal to {minimum}"
        )
    return value


def dry_run(query: Mapping[str, str], body_options: Mapping[str, Any] | None = None) -> bool:
    """``dryRun=All`` from the query (or a DeleteOptions body); any other value is a 400 like upstream."""
    getall = getattr(query, "getall", None)
    values: list[str] = list(getall("dryRun", [])) if getall is not None else []
    if not values and "dryRun" in query:
        values = [query["dryRun"]]
    if body_options and body_options.get("dryRun"):
        values.extend(str(value) for value in body_options["dryRun"])
    for value in values:
        if value != "All":
            raise ApiError(400, "BadRequest", f'Invalid value: "{value}": valid values are: All (dryRun)')
    return bool(values)


def field_validation(query: Mapping[str, str]) -> str:
    """``fieldValidation`` with kube-apiserver's default, ``Warn`` (since 1.27)."""
    value = query.get("fieldValidation") or "Warn"
    if value not in ("Strict", "Warn", "Ignore"):
        raise ApiError(
            400,
            "BadRequest",
            f'fieldValidation parameter unsupported: "{value}", must be one of: Ignore, Warn, Strict',
        )
    return value


def apply_duplicates(body: DecodedBody, *, validation: str, warnings: list[str]) -> None:
    """Duplicate JSON keys: 400 under Strict, warnings under Warn, nothing under Ignore."""
    if not body.duplicates or validation == "Ignore":
        return
    if validation == "Strict":
        raise ApiError(400, "BadRequest", "strict decoding error: " + ", ".join(body.duplicates))
    warnings.extend(body.duplicates)
