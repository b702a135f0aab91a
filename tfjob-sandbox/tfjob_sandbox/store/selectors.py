"""Label and field selectors: ``Selection.parse(...)`` once per request, then a cheap match per object."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import EVENTS, NAMESPACES, PODS, SERVICES, ResourceType, storage_type

_NAME_PART = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY_RE = re.compile(rf"^({_PREFIX}/)?{_NAME_PART}$")
_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def _parse_error(detail: str) -> ApiError:
    return ApiError(400, "BadRequest", f"unable to parse requirement: {detail}")


@dataclass(frozen=True)
class Requirement:
    """One label requirement: ``key <operator> values``."""

    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!exists", "gt", "lt"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "exists":
            return present
        if self.operator == "!exists":
            return not present
        if self.operator in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.operator in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            actual = int(labels[self.key])
        except ValueError:
            return False
        bound = int(next(iter(self.values)))
        return actual > bound if self.operator == "gt" else actual < bound


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        return cls(tuple(_LabelParser(text).parse()))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(requirement.matches(labels) for requirement in self.requirements)


class _LabelParser:
    """A small hand-written scanner for the label selector grammar (sets use parentheses)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        if not self.text.strip():
            return requirements
        while True:
            requirements.append(self._requirement())
            self._skip_spaces()
            if self.pos >= len(self.text):
                return requirements
            if self.text[self.pos] != ",":
                raise _parse_error(f"found '{self.text[self.pos]}', expected: ',' or 'end of string'")
            self.pos += 1

    def _skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _word(self) -> str:
        self._skip_spaces()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in " \t,()=!<>":
            self.pos += 1
        return self.text[start : self.pos]

    def _requirement(self) -> Requirement:
        self._skip_spaces()
        negated = self.text.startswith("!", self.pos)
        if negated:
            self.pos += 1
        key = self._word()
        _check_key(key)
        if negated:
            return Requirement(key, "!exists")
        self._skip_spaces()
        rest = self.text[self.pos :]
        if not rest or rest.startswith(","):
            return Requirement(key, "exists")
        for symbol, operator in (("==", "="), ("!=", "!="), ("=", "="), (">", "gt"), ("<", "lt")):
            if rest.startswith(symbol):
                self.pos += len(symbol)
                value = self._word()
                if operator in ("gt", "lt"):
                    if not re.fullmatch(r"-?\d+", value):
                        raise _parse_error(
                            f"for 'Gt', 'Lt' operators, the value must be an integer: {value!r}"
                        )
                else:
                    _check_value(value)
                return Requirement(key, operator, frozenset({value}))
        operator = self._word()
        if operator not in ("in", "notin"):
            raise _parse_error(f"found '{operator or rest[:1]}', expected: in, notin, =, ==, !=, gt, lt")
        return Requirement(key, operator, self._value_set())

    def _value_set(self) -> frozenset[str]:
        self._skip_spaces()
        if not self.text.startswith("(", self.pos):
            raise _parse_error("found '" + self.text[self.pos : self.pos + 1] + "', expected: '('")
        self.pos += 1
        values: set[str] = set()
        while True:
            value = self._word()
            _check_value(value)
            values.add(value)
            self._skip_spaces()
            if self.text.startswith(")", self.pos):
                self.pos += 1
                return frozenset(values)
            if not self.text.startswith(",", self.pos):
                raise _parse_error("found '" + self.text[self.pos : self.pos + 1] + "', expected: ',', ')'")
            self.pos += 1


def _check_key(key: str) -> None:
    if not key or not _KEY_RE.match(key) or len(key.rsplit("/", 1)[0]) > 253:
        raise _parse_error(
            f'key: Invalid value: "{key}": name part must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )


def _check_value(value: str) -> None:
    if len(value) > 63 or not _VALUE_RE.match(value):
        raise _parse_error(
            f'values[0]: Invalid value: "{value}": a valid label must be an empty string or consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )


# --- field selectors -----------------------------------------------------------------------------

FieldGetter = Callable[[dict[str, Any]], str]


def _path(*keys: str) -> FieldGetter:
    def get(obj: dict[str, Any]) -> str:
        node: Any = obj
        for key in keys:
            if not isinstance(node, dict):
                return ""
            node = node.get(key)
        if node is None:
            return ""
        if isinstance(node, bool):
            return "true" if node else "false"
        return str(node)

    return get


_COMMON_FIELDS: dict[str, FieldGetter] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}

_FIELDS_BY_TYPE: dict[ResourceType, dict[str, FieldGetter]] = {
    PODS: {
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": _path("spec", "hostNetwork"),
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    NAMESPACES: {"status.phase": _path("status", "phase")},
    SERVICES: {"spec.clusterIP": _path("spec", "clusterIP"), "spec.type": _path("spec", "type")},
    EVENTS: {
        **{
            f"involvedObject.{name}": _path("involvedObject", name)
            for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
        },
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _path("source", "component"),
        "type": _path("type"),
    },
}

#: events.k8s.io/v1 field names (kube-apiserver converts them to the core/v1 ones).
EVENTS_V1_FIELD_ALIASES: dict[str, str] = {
    **{
        f"regarding.{name}": f"involvedObject.{name}"
        for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    },
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    operator: str  # "=" or "!="
    value: str
    getter: FieldGetter

    def matches(self, obj: dict[str, Any]) -> bool:
        return (self.getter(obj) == self.value) == (self.operator == "=")


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector over the fields ``rt`` supports; empty matches everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    @classmethod
    def parse(cls, text: str, rt: ResourceType) -> FieldSelector:
        if not text.strip():
            return cls()
        supported = {**_COMMON_FIELDS, **_FIELDS_BY_TYPE.get(storage_type(rt), {})}
        aliases = EVENTS_V1_FIELD_ALIASES if rt.group == "events.k8s.io" else {}
        requirements = []
        for term in _split_unescaped(text, ","):
            field_name, operator, value = _split_field_term(term)
            field_name = aliases.get(field_name, field_name)
            getter = supported.get(field_name)
            if getter is None:
                raise ApiError(400, "BadRequest", f"field label not supported: {field_name}")
            requirements.append(FieldRequirement(field_name, operator, value, getter))
        return cls(tuple(requirements))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: dict[str, Any]) -> bool:
        return all(requirement.matches(obj) for requirement in self.requirements)

    def exact(self, field_name: str) -> str | None:
        """The value ``field_name`` must equal, if the selector pins it (lets the store use an index)."""
        for requirement in self.requirements:
            if requirement.field == field_name and requirement.operator == "=":
                return requirement.value
        return None


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _split_field_term(term: str) -> tuple[str, str, str]:
    for symbol, operator in (("!=", "!="), ("==", "="), ("=", "=")):
        index = _find_unescaped(term, symbol)
        if index >= 0:
            return term[:index].strip(), operator, _unescape(term[index + len(symbol) :].strip())
    raise ApiError(400, "BadRequest", f"invalid selector: '{term}'; can't understand '{term}'")


def _find_unescaped(term: str, symbol: str) -> int:
    index = term.find(symbol)
    while index > 0 and term[index - 1] == "\\":
        index = term.find(symbol, index + 1)
    return index


@dataclass(frozen=True)
class Selection:
    """Label and field selector of one list or watch request, matched together."""

    labels: LabelSelector = LabelSelector()
    fields: FieldSelector = FieldSelector()

    @classmethod
    def parse(cls, rt: ResourceType, *, label_selector: str = "", field_selector: str = "") -> Selection:
        return cls(LabelSelector.parse(label_selector), FieldSelector.parse(field_selector, rt))

    @property
    def empty(self) -> bool:
        return self.labels.empty and self.fields.empty

    def matches(self, obj: dict[str, Any]) -> bool:
        if not self.labels.empty and not self.labels.matches(obj.get("metadata", {}).get("labels")):
            return False
        return self.fields.matches(obj)
