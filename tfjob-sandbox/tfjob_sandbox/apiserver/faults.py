"""API fault injection: 5xx, 429 with ``Retry-After``, connection resets and latency, by verb and resource.

``ApiFaults`` holds the rules; the server applies them before authorisation.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tfjob_sandbox.api.errors import REASON_FOR_CODE, ApiError

ACTIONS = ("status", "reset", "latency")

_MESSAGES = {
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: injected by the sandbox fault controls",
    503: "the server is currently unable to handle the request",
}


@dataclass
class FaultRule:
    """One active fault.  ``remaining=None`` means until cleared; ``rate=None`` means every match;
    ``until`` (monotonic seconds) ends the fault at that moment, whatever is left of its count."""

    id: int
    action: str
    status: int = 500
    retry_after: int = 1
    latency: float = 0.0
    remaining: int | None = None
    rate: float | None = None
    verbs: frozenset[str] | None = None
    resources: frozenset[str] | None = None
    until: float | None = None
    fired: int = field(default=0)

    def expired(self, now: float) -> bool:
        return self.until is not None and now >= self.until

    def matches(self, verb: str, resource: str) -> bool:
        if self.verbs is not None and verb not in self.verbs:
            return False
        if self.resources is None:
            return True
        return resource in self.resources or resource.split("/", 1)[0] in self.resources

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "action": self.action,
            "status": self.status,
            "retryAfter": self.retry_after,
            "latency": self.latency,
            "remaining": self.remaining,
            "rate": self.rate,
            "verbs": sorted(self.verbs) if self.verbs is not None else None,
            "resources": sorted(self.resources) if self.resources is not None else None,
            "secondsLeft": None if self.until is None else max(0.0, self.until - time.monotonic()),
            "fired": self.fired,
        }

    def error(self) -> ApiError:
        reason = REASON_FOR_CODE.get(self.status, "InternalError")
        message = _MESSAGES.get(self.status, f"injected fault (HTTP {self.status})")
        if self.status == 429:
            return ApiError(
                429,
                reason,
                message,
                details={
                    "retryAfterSeconds": self.retry_after,
                    "causes": [{"reason": "UnexpectedServerResponse", "message": message}],
                },
                headers={"Retry-After": str(self.retry_after)},
            )
        headers = {"Retry-After": str(self.retry_after)} if self.status == 503 else None
        return ApiError(self.status, reason, message, details={}, headers=headers)


class ApiFaults:
    """The set of active API fault rules; :meth:`pick` decides which fire for a request.

    :param seed: seeds the random source for ``rate`` faults, so a test run is reproducible.
    """

    def __init__(self, *, seed: int | None = None) -> None:
        self._rules: list[FaultRule] = []
        self._ended: dict[int, int] = {}  # id -> times fired, of rules no longer active
        self._next_id = 1
        self._random = random.Random(seed)
        self._lock = threading.Lock()  # rules are added from the test thread, picked on the loop

    def add(
        self,
        action: str,
        *,
        status: int = 500,
        count: int | None = None,
        rate: float | None = None,
        verbs: Iterable[str] | None = None,
        resources: Iterable[str] | None = None,
        retry_after: int = 1,
        latency: float = 0.0,
        duration: float | None = None,
    ) -> FaultRule:
        """Activate a fault; returns its rule (``rule.id`` removes it again).

        :param duration: seconds after which the fault ends by itself (None: when its count is
            used up or it is removed).
        """
        if action not in ACTIONS:
            raise ValueError(f"unknown fault action {action!r}; expected one of {ACTIONS}")
        if action == "status" and not 400 <= status <= 599:
            raise ValueError(f"fault status must be an HTTP error code, got {status}")
        if rate is not None and not 0.0 <= rate <= 1.0:
            raise ValueError(f"fault rate must be within [0, 1], got {rate}")
        if count is not None and count < 1:
            raise ValueError(f"fault count must be positive, got {count}")
        if duration is not None and not duration > 0:
            raise ValueError(f"fault duration must be a positive number of seconds, got {duration}")
        if retry_after < 0:
            raise ValueError(f"fault retry_after must be >= 0 seconds, got {retry_after}")
        with self._lock:
            rule = FaultRule(
                id=self._next_id,
                action=action,
                status=status,
                retry_after=retry_after,
                latency=latency,
                remaining=count,
                rate=rate,
                verbs=frozenset(verbs) if verbs is not None else None,
                resources=frozenset(resources) if resources is not None else None,
                until=None if duration is None else time.monotonic() + duration,
            )
            self._next_id += 1
            self._rules.append(rule)
            return rule

    def remove(self, rule_id: int) -> bool:
        with self._lock:
            before = len(self._rules)
            for rule in self._rules:
                if rule.id == rule_id:
                    self._ended[rule.id] = rule.fired
            self._rules = [rule for rule in self._rules if rule.id != rule_id]
            return len(self._rules) != before

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def rules(self) -> list[dict[str, Any]]:
        with self._lock:
            self._drop_expired()
            return [rule.to_dict() for rule in self._rules]

    def _drop_expired(self) -> None:
        now = time.monotonic()
        for rule in self._rules:
            if rule.expired(now):
                self._ended[rule.id] = rule.fired
        self._rules = [rule for rule in self._rules if not rule.expired(now)]

    def fired(self, rule_id: int) -> int:
        """How many requests rule ``rule_id`` has hit so far, also after it ended (0 if unknown)."""
        with self._lock:
            for rule in self._rules:
                if rule.id == rule_id:
                    return rule.fired
            return self._ended.get(rule_id, 0)

    def pick(self, verb: str, resource: str) -> list[FaultRule]:
        """The rules that fire for this request (consuming their counts), latency rules first."""
        if not self._rules:
            return []
        fired: list[FaultRule] = []
        failing = False  # at most one status/reset rule applies (and is consumed) per request
        with self._lock:
            self._drop_expired()
            for rule in list(self._rules):
                if not rule.matches(verb, resource) or (failing and rule.action != "latency"):
                    continue
                if rule.rate is not None and self._random.random() >= rule.rate:
                    continue
                failing = failing or rule.action != "latency"
                rule.fired += 1
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._ended[rule.id] = rule.fired
                        self._rules.remove(rule)
                fired.append(rule)
        return sorted(fired, key=lambda rule: rule.action != "latency")
