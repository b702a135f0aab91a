"""What kube-apiserver does with a CRD's ``openAPIV3Schema``: prune, default and validate, in its wording.

``StructuralSchema(schema)``: ``prune``, ``apply_defaults``, ``validate``; CEL rules
(``x-kubernetes-validations``) are not evaluated.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

Cause = dict[str, str]

#: ObjectMeta fields a client may send at the root of any object (kube-apiserver decodes
#: ``metadata`` as ObjectMeta, so anything else there is an unknown field).
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)

_JSON_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _render(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict | list):
        return f'"{_type_name(value)}"'
    return str(value)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


class StructuralSchema:
    """One version's ``openAPIV3Schema``, applied to whole objects (root = the object itself)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = dict(schema)

    # --- pruning --------------------------------------------------------------------------------

    def prune(self, obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """A copy of ``obj`` without undeclared fields and non-nullable nulls, plus the unknown paths."""
        unknown: list[str] = []
        pruned = copy.deepcopy(obj)
        self._prune_object(pruned, self.schema, "", unknown, root=True)
        return pruned, sorted(unknown)

    def _prune(self, value: Any, schema: Mapping[str, Any], path: str, unknown: list[str]) -> None:
        if isinstance(value, dict):
            self._prune_object(value, schema, path, unknown, root=False)
        elif isinstance(value, list):
            items = schema.get("items")
            if isinstance(items, Mapping):
                for index, item in enumerate(value):
                    self._prune(item, items, f"{path}[{index}]", unknown)

    def _prune_object(
        self, value: dict[str, Any], schema: Mapping[str, Any], path: str, unknown: list[str], *, root: bool
    ) -> None:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        embedded = root or bool(schema.get("x-kubernetes-embedded-resource"))
        for key in list(value):
            child_path = _join(path, key)
            child = value[key]
            if embedded and key in ("apiVersion", "kind"):
                continue
            if embedded and key == "metadata":
                if isinstance(child, dict):
                    for meta_key in child:
                        if meta_key not in OBJECT_META_FIELDS:
                            unknown.append(_join(child_path, meta_key))
                    for meta_key in [k for k in child if k not in OBJECT_META_FIELDS]:
                        del child[meta_key]
                continue
            if key in properties:
                child_schema = properties[key]
            elif isinstance(additional, Mapping):
                child_schema = additional
            elif preserve or additional is True:
                continue
            else:
                unknown.append(child_path)
                del value[key]
                continue
            if child is None and not child_schema.get("nullable"):
                del value[key]
                continue
            self._prune(child, child_schema, child_path, unknown)

    # --- defaulting -----------------------------------------------------------------------------

    def apply_defaults(self, obj: dict[str, Any]) -> None:
        """Fill ``default`` values (in place) wherever a defaulted property is absent."""
        self._default(obj, self.schema)

    def _default(self, value: Any, schema: Mapping[str, Any]) -> None:
        if isinstance(value, dict):
            properties: Mapping[str, Any] = schema.get("properties") or {}
            for key, child_schema in properties.items():
                if key not in value and "default" in child_schema:
                    value[key] = copy.deepcopy(child_schema["default"])
                if key in value:
                    self._default(value[key], child_schema)
            additional = schema.get("additionalProperties")
            if isinstance(additional, Mapping):
                for key in value:
                    if key not in properties:
                        self._default(value[key], additional)
        elif isinstance(value, list):
            items = schema.get("items")
            if isinstance(items, Mapping):
                for item in value:
                    self._default(item, items)

    # --- validation -----------------------------------------------------------------------------

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        """Status causes for every schema violation in ``obj`` (empty when valid)."""
        causes: list[Cause] = []
        self._validate(obj, self.schema, "", causes, root=True)
        return causes

    def _validate(
        self, value: Any, schema: Mapping[str, Any], path: str, causes: list[Cause], *, root: bool = False
    ) -> None:
        if value is None:
            if not schema.get("nullable") and schema.get("type"):
                causes.append(_type_cause(path, value, str(schema["type"])))
            return
        if not self._check_type(value, schema, path, causes):
            return
        if "enum" in schema and value not in schema["enum"]:
            supported = ", ".join(_render(item) for item in schema["enum"])
            causes.append(
                {
                    "reason": "FieldValueNotSupported",
                    "message": f"Unsupported value: {_render(value)}: supported values: {supported}",
                    "field": path,
                }
            )
        if isinstance(value, str):
            self._validate_string(value, schema, path, causes)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self._validate_number(value, schema, path, causes)
        elif isinstance(value, list):
            self._validate_array(value, schema, path, causes)
        elif isinstance(value, dict):
            self._validate_object(value, schema, path, causes, root=root)
        for branch_key in ("allOf",):
            for branch in schema.get(branch_key) or []:
                self._validate(value, branch, path, causes)

    def _check_type(self, value: Any, schema: Mapping[str, Any], path: str, causes: list[Cause]) -> bool:
        if schema.get("x-kubernetes-int-or-string"):
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                return True
            causes.append(_type_cause(path, value, "integer or string"))
            return False
        expected = schema.get("type")
        if not expected:
            return True
        if _has_type(value, str(expected)):
            return True
        causes.append(_type_cause(path, value, str(expected)))
        return False

    def _validate_string(self, value: str, schema: Mapping[str, Any], path: str, causes: list[Cause]) -> None:
        pattern = schema.get("pattern")
        if pattern and not _compiled(str(pattern)).search(value):
            causes.append(_invalid(path, value, f"{path} in body should match '{pattern}'"))
        if "maxLength" in schema and len(value) > int(schema["maxLength"]):
            causes.append(
                {
                    "reason": "FieldValueTooLong",
                    "field": path,
                    "message": f"Too long: may not be longer than {schema['maxLength']}",
                }
            )
        if "minLength" in schema and len(value) < int(schema["minLength"]):
            causes.append(
                _invalid(path, value, f"{path} in body should be at least {schema['minLength']} chars long")
            )

    def _validate_number(
        self, value: float, schema: Mapping[str, Any], path: str, causes: list[Cause]
    ) -> None:
        if "minimum" in schema:
            bound = schema["minimum"]
            if value < bound or (schema.get("exclusiveMinimum") and value == bound):
                relation = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
                causes.append(_invalid(path, value, f"{path} in body should be {relation} {bound}"))
        if "maximum" in schema:
            bound = schema["maximum"]
            if value > bound or (schema.get("exclusiveMaximum") and value == bound):
                relation = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
                causes.append(_invalid(path, value, f"{path} in body should be {relation} {bound}"))
        if schema.get("format") == "int32" and isinstance(value, int) and not -(2**31) <= value < 2**31:
            causes.append(_invalid(path, value, f"{path} in body must be of type int32: {_render(value)}"))

    def _validate_array(
        self, value: list[Any], schema: Mapping[str, Any], path: str, causes: list[Cause]
    ) -> None:
        if "maxItems" in schema and len(value) > int(schema["maxItems"]):
            causes.append(
                {
                    "reason": "FieldValueTooMany",
                    "field": path,
                    "message": f"Too many: {len(value)}: must have at most {schema['maxItems']} items",
                }
            )
        if "minItems" in schema and len(value) < int(schema["minItems"]):
            causes.append(
                _invalid(path, len(value), f"{path} in body should have at least {schema['minItems']} items")
            )
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                self._validate(item, items, f"{path}[{index}]", causes)
        if schema.get("x-kubernetes-list-type") == "set" and len({_hashable(v) for v in value}) != len(value):
            causes.append({"reason": "FieldValueDuplicate", "field": path, "message": "Duplicate value"})

    def _validate_object(
        self, value: dict[str, Any], schema: Mapping[str, Any], path: str, causes: list[Cause], *, root: bool
    ) -> None:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        for required in schema.get("required") or []:
            if required not in value:
                causes.append(
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value",
                        "field": _join(path, required),
                    }
                )
        additional = schema.get("additionalProperties")
        for key, child in value.items():
            if (root or schema.get("x-kubernetes-embedded-resource")) and key == "metadata":
                continue
            if key in properties:
                self._validate(child, properties[key], _join(path, key), causes)
            elif isinstance(additional, Mapping):
                self._validate(child, additional, _join(path, key), causes)
        if "maxProperties" in schema and len(value) > int(schema["maxProperties"]):
            causes.append(
                {
                    "reason": "FieldValueTooMany",
                    "field": path,
                    "message": f"Too many: {len(value)}: must have at most {schema['maxProperties']} items",
                }
            )


def _has_type(value: Any, expected: str) -> bool:
    if expected == "object":
        return isinstance(value, dict)
    if expected == "array":
        return isinstance(value, list)
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((key, _hashable(item)) for key, item in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    return value


def _type_cause(path: str, value: Any, expected: str) -> Cause:
    return {
        "reason": "FieldValueTypeInvalid",
        "message": f'Invalid value: "{_type_name(value)}": {path} in body must be of type {expected}: '
        f'"{_type_name(value)}"',
        "field": path,
    }


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {_render(value)}: {detail}",
        "field": path,
    }
