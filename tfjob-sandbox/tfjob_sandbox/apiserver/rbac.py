"""The RBAC file (docs/sandbox.md): tokens to users, users to Role-like rules; denials in RBAC wording."""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.apiserver.routing import RequestInfo


@dataclass(frozen=True)
class Rule:
    """One grant.  ``None`` for ``namespaces`` means every namespace and cluster-scoped resources."""

    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    namespaces: frozenset[str] | None = None
    resource_names: frozenset[str] | None = None

    def allows(self, info: RequestInfo) -> bool:
        if not _matches(self.verbs, info.verb):
            return False
        if not _matches(self.api_groups, info.api_group):
            return False
        if not (
            _matches(self.resources, info.rbac_resource)
            or (info.subresource and f"{info.resource}/*" in self.resources)
        ):
            return False
        if self.namespaces is not None and not _matches(self.namespaces, info.namespace):
            return False
        return self.resource_names is None or (bool(info.name) and info.name in self.resource_names)


def _matches(allowed: frozenset[str], value: str) -> bool:
    return "*" in allowed or value in allowed


class RbacPolicy:
    """Tokens → users → rules, loaded from the YAML file documented in ``docs/sandbox.md``."""

    def __init__(self, *, tokens: Mapping[str, str], rules: Mapping[str, Iterable[Rule]]) -> None:
        self.tokens = dict(tokens)
        self.rules = {user: list(user_rules) for user, user_rules in rules.items()}

    @classmethod
    def from_file(cls, path: str | Path) -> RbacPolicy:
        with open(path, encoding="utf-8") as handle:
            return cls.from_dict(yaml.safe_load(handle) or {})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RbacPolicy:
        tokens = data.get("tokens") or {}
        users = data.get("users") or {}
        if not isinstance(tokens, Mapping) or not isinstance(users, Mapping):
            raise ValueError("RBAC file: 'tokens' must map token -> user and 'users' user -> list of rules")
        rules: dict[str, list[Rule]] = {}
        for user, raw_rules in users.items():
            rules[str(user)] = [
                _parse_rule(raw, where=f"users.{user}[{i}]") for i, raw in enumerate(raw_rules or [])
            ]
        return cls(tokens={str(token): str(user) for token, user in tokens.items()}, rules=rules)

    def user_for(self, token: str) -> str | None:
        for known, user in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return user
        return None

    def allows(self, user: str, info: RequestInfo) -> bool:
        return any(rule.allows(info) for rule in self.rules.get(user, ()))


def _parse_rule(raw: Any, *, where: str) -> Rule:
    if not isinstance(raw, Mapping):
        raise ValueError(f"RBAC file: {where} must be a mapping")
    unknown = set(raw) - {"verbs", "apiGroups", "resources", "namespaces", "resourceNames"}
    if unknown:
        raise ValueError(f"RBAC file: {where} has unknown keys {sorted(unknown)}")

    def strings(key: str, *, required: bool) -> frozenset[str] | None:
        value = raw.get(key)
        if value is None:
            if required:
                raise ValueError(f"RBAC file: {where}.{key} is required")
            return None
        if isinstance(value, str) or not isinstance(value, list):
            raise ValueError(f"RBAC file: {where}.{key} must be a list of strings")
        return frozenset(str(item) for item in value)

    verbs = strings("verbs", required=True)
    groups = strings("apiGroups", required=True)
    resources = strings("resources", required=True)
    assert verbs is not None and groups is not None and resources is not None
    return Rule(
        verbs,
        groups,
        resources,
        strings("namespaces", required=False),
        strings("resourceNames", required=False),
    )


def forbidden(user: str, info: RequestInfo) -> ApiError:
    """kube-apiserver's RBAC denial: ``<res> "<name>" is forbidden: User "<u>" cannot <verb> ...``."""
    qualified = f"{info.resource}.{info.api_group}" if info.api_group else info.resource
    subject = f'{qualified} "{info.name}"' if info.name else qualified
    scope = f'in the namespace "{info.namespace}"' if info.namespace else "at the cluster scope"
    reason = (
        f'User "{user}" cannot {info.verb} resource "{info.rbac_resource}" '
        f'in API group "{info.api_group}" {scope}'
    )
    details: dict[str, Any] = {"name": info.name, "kind": info.resource}
    if info.api_group:
        details["group"] = info.api_group
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {reason}", details=details)
