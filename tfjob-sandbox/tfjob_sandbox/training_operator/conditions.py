"""The operator's condition bookkeeping on ``TFJob.status`` (R8 in docs/concepts/rules.md): pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CREATED = "Created"
RUNNING = "Running"
RESTARTING = "Restarting"
SUCCEEDED = "Succeeded"
SUSPENDED = "Suspended"
FAILED = "Failed"

TRUE = "True"
FALSE = "False"

#: Condition reasons: ``TFJob`` + the generic reason (``NewReason``).
REASON_CREATED = "TFJobCreated"
REASON_RUNNING = "TFJobRunning"
REASON_RESTARTING = "TFJobRestarting"
REASON_SUCCEEDED = "TFJobSucceeded"
REASON_SUSPENDED = "TFJobSuspended"
REASON_RESUMED = "TFJobResumed"
REASON_FAILED = "TFJobFailed"


def conditions(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    value = status.get("conditions")
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


def is_true(status: Mapping[str, Any], condition_type: str) -> bool:
    return any(c.get("type") == condition_type and c.get("status") == TRUE for c in conditions(status))


def is_finished(status: Mapping[str, Any]) -> bool:
    return is_true(status, SUCCEEDED) or is_true(status, FAILED)


def find(status: Mapping[str, Any], condition_type: str) -> dict[str, Any] | None:
    """The first condition of ``condition_type`` (``getCondition``)."""
    return next((c for c in conditions(status) if c.get("type") == condition_type), None)


def set_condition(
    status: dict[str, Any], condition_type: str, condition_status: str, *, reason: str, message: str, now: str
) -> None:
    """``UpdateJobConditions``: apply one condition to ``status`` in place, with the R8 rules."""
    if is_true(status, FAILED):
        return
    current = find(status, condition_type)
    if current is not None and current.get("status") == condition_status and current.get("reason") == reason:
        return
    transition = now
    if current is not None and current.get("status") == condition_status:
        transition = current.get("lastTransitionTime", now)
    new = {
        "type": condition_type,
        "status": condition_status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": transition,
    }
    kept: list[dict[str, Any]] = []
    for existing in conditions(status):
        existing_type = existing.get("type")
        if existing_type == condition_type:
            continue
        if {condition_type, existing_type} == {RUNNING, RESTARTING}:
            continue
        if condition_type in (SUCCEEDED, FAILED) and existing_type == RUNNING:
            existing = {**existing, "status": FALSE}
        kept.append(existing)
    kept.append(new)
    status["conditions"] = kept
