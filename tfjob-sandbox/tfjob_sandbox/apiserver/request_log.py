"""Counts of the API requests served, by user, verb and resource (admin requests excluded).

``sb.request_counts()`` and ``sb.request_total(...)`` in process, ``GET /sandbox/v1/requests`` from outside.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class RequestKey:
    """One class of request: ``resource`` is e.g. ``tfjobs``, ``pods/log``; empty for discovery paths."""

    user: str
    verb: str
    resource: str


class RequestLog:
    """A counter of served requests; written only on the sandbox's event loop."""

    def __init__(self) -> None:
        self._counts: Counter[RequestKey] = Counter()

    def record(self, *, user: str, verb: str, resource: str) -> None:
        self._counts[RequestKey(user=user, verb=verb, resource=resource)] += 1

    def snapshot(self) -> list[dict[str, object]]:
        """Every counter as ``{"user", "verb", "resource", "count"}``, sorted for stable output."""
        return [
            {"user": key.user, "verb": key.verb, "resource": key.resource, "count": count}
            for key, count in sorted(self._counts.items())
        ]

    def total(self, *, user: str | None = None, verb: str | None = None, resource: str | None = None) -> int:
        """The number of requests matching every filter given."""
        return sum(
            count
            for key, count in self._counts.items()
            if (user is None or key.user == user)
            and (verb is None or key.verb == verb)
            and (resource is None or key.resource == resource)
        )

    def reset(self) -> None:
        self._counts.clear()
