"""JobSet status conditions: ``updateCondition``'s rules, and the event each change emits."""

from __future__ import annotations

from typing import Any

from tfjob_sandbox.api import jobset_wire as wire

_EXCLUSIVE = {
    wire.STARTUP_IN_PROGRESS: wire.STARTUP_COMPLETED,
    wire.STARTUP_COMPLETED: wire.STARTUP_IN_PROGRESS,
}


def update_condition(
    conditions: list[dict[str, Any]], type_: str, status: str, reason: str, message: str, *, now: str
) -> bool:
    """Add or change one condition in place; True when anything changed.

    A condition of the same type with another status is replaced; with the same status it is
    left alone.  A new condition is added only when True.  Setting one of the two startup-policy
    conditions True turns the other False.
    """
    new = {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}
    changed = False
    found = False
    for index, current in enumerate(conditions):
        if current.get("type") == type_:
            found = True
            if current.get("status") != status:
                conditions[index] = new
                changed = True
        elif (
            _EXCLUSIVE.get(type_) == current.get("type")
            and current.get("status") == "True"
            and status == "True"
        ):
            conditions[index] = {**current, "status": "False"}
            changed = True
    if not found and status == "True":
        conditions.append(new)
        changed = True
    return changed


def finished(status: dict[str, Any]) -> str:
    """``Completed`` or ``Failed`` when the JobSet carries that condition True, else ``""``."""
    for condition in status.get("conditions") or []:
        if condition.get("type") in (wire.COMPLETED, wire.FAILED) and condition.get("status") == "True":
            return str(condition["type"])
    return ""


def finish_time(status: dict[str, Any]) -> str:
    """The ``lastTransitionTime`` of the True Completed/Failed condition (``""`` if none)."""
    for condition in status.get("conditions") or []:
        if condition.get("type") in (wire.COMPLETED, wire.FAILED) and condition.get("status") == "True":
            return str(condition.get("lastTransitionTime") or "")
    return ""
