"""A pod's phase and conditions derived from its container statuses, as the kubelet's ``getPhase`` does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
TERMINAL_PHASES = (SUCCEEDED, FAILED)


def init_phase(init_statuses: Sequence[Mapping[str, Any]], *, restart_policy: str) -> str | None:
    """Pending/Failed while init containers are unfinished; ``None`` once all exited 0."""
    for status in init_statuses:
        terminated = (status.get("state") or {}).get("terminated")
        if terminated and int(terminated.get("exitCode", 0)) == 0:
            continue
        if terminated and restart_policy == "Never":
            return FAILED
        return PENDING
    return None


def pod_phase(
    statuses: Sequence[Mapping[str, Any]],
    *,
    restart_policy: str,
    init_statuses: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The pod phase the kubelet reports for these container statuses."""
    blocked = init_phase(init_statuses, restart_policy=restart_policy)
    if blocked is not None:
        return blocked
    running = waiting = stopped = succeeded = 0
    for status in statuses:
        state = status.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            if int(state["terminated"].get("exitCode", 0)) == 0:
                succeeded += 1
        elif (status.get("lastState") or {}).get("terminated"):
            stopped += 1
        else:
            waiting += 1
    if waiting > 0:
        return PENDING
    if running > 0:
        return RUNNING
    if stopped > 0:
        if restart_policy == "Always":
            return RUNNING
        if stopped == succeeded:
            return SUCCEEDED
        if restart_policy == "Never":
            return FAILED
        return RUNNING
    return PENDING


def not_ready_names(statuses: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(s.get("name")) for s in statuses if not s.get("ready")]


def incomplete_init_names(init_statuses: Sequence[Mapping[str, Any]]) -> list[str]:
    names = []
    for status in init_statuses:
        terminated = (status.get("state") or {}).get("terminated")
        if not (terminated and int(terminated.get("exitCode", 0)) == 0):
            names.append(str(status.get("name")))
    return names


def merge_condition(
    previous: Sequence[Mapping[str, Any]],
    condition_type: str,
    status: str,
    *,
    now: str,
    reason: str | None = None,
    message: str | None = None,
) -> dict[str, Any]:
    """A pod condition; ``lastTransitionTime`` is kept while its status does not change."""
    old = next((c for c in previous if c.get("type") == condition_type), None)
    transition = (
        old.get("lastTransitionTime", now) if old is not None and old.get("status") == status else now
    )
    condition: dict[str, Any] = {
        "type": condition_type,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": transition,
    }
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def pod_conditions(
    previous: Sequence[Mapping[str, Any]],
    *,
    phase: str,
    statuses: Sequence[Mapping[str, Any]],
    init_statuses: Sequence[Mapping[str, Any]],
    sandbox_ready: bool,
    now: str,
    extra: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The kubelet's pod conditions, in its order, after the scheduler's ``PodScheduled``."""
    conditions: list[dict[str, Any]] = [dict(c) for c in extra]
    conditions.append(
        merge_condition(previous, "PodReadyToStartContainers", "True" if sandbox_ready else "False", now=now)
    )
    incomplete = incomplete_init_names(init_statuses)
    if incomplete and phase not in (SUCCEEDED,):
        conditions.append(
            merge_condition(
                previous,
                "Initialized",
                "False",
                now=now,
                reason="ContainersNotInitialized",
                message=f"containers with incomplete status: [{' '.join(incomplete)}]",
            )
        )
    else:
        conditions.append(merge_condition(previous, "Initialized", "True", now=now))
    unready = not_ready_names(statuses)
    if phase in TERMINAL_PHASES:
        for kind in ("Ready", "ContainersReady"):
            conditions.append(merge_condition(previous, kind, "False", now=now, reason="PodCompleted"))
    elif unready:
        message = f"containers with unready status: [{' '.join(unready)}]"
        for kind in ("Ready", "ContainersReady"):
            conditions.append(
                merge_condition(
                    previous, kind, "False", now=now, reason="ContainersNotReady", message=message
                )
            )
    else:
        for kind in ("Ready", "ContainersReady"):
            conditions.append(merge_condition(previous, kind, "True", now=now))
    scheduled = next((c for c in previous if c.get("type") == "PodScheduled"), None)
    if scheduled is not None:
        conditions.append(dict(scheduled))
    return conditions
