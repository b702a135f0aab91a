"""What the Job controller reads off a pod: phase tests, completion index, readiness, finish time, order."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tfjob_sandbox.api import job_wire

Pod = dict[str, Any]
Job = dict[str, Any]

SUCCEEDED, FAILED = "Succeeded", "Failed"


def phase(pod: Pod) -> str:
    return str((pod.get("status") or {}).get("phase", "Pending"))


def uid(pod: Pod) -> str:
    return str(pod["metadata"].get("uid", ""))


def deleting(pod: Pod) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def is_active(pod: Pod) -> bool:
    """controller.FilterActivePods: neither finished nor being deleted."""
    return phase(pod) not in (SUCCEEDED, FAILED) and not deleting(pod)


def is_terminating(pod: Pod) -> bool:
    """controller.CountTerminatingPods: being deleted but not finished yet."""
    return deleting(pod) and phase(pod) not in (SUCCEEDED, FAILED)


def only_replace_failed(job: Job) -> bool:
    """Replacement waits for phase Failed (podReplacementPolicy Failed, or any podFailurePolicy)."""
    spec = job.get("spec") or {}
    return (
        spec.get("podReplacementPolicy") == job_wire.REPLACE_FAILED
        or spec.get("podFailurePolicy") is not None
    )


def is_failed(pod: Pod, job: Job) -> bool:
    """isPodFailed: phase Failed; unless only failed pods are replaced, a deleted unfinished pod too."""
    if phase(pod) == FAILED:
        return True
    if only_replace_failed(job):
        return False
    return deleting(pod) and phase(pod) != SUCCEEDED


def has_finalizer(pod: Pod) -> bool:
    return job_wire.TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or [])


def is_indexed(job: Job) -> bool:
    return (job.get("spec") or {}).get("completionMode") == job_wire.INDEXED


def completion_index(pod: Pod) -> int | None:
    """The pod's index from its annotation (the label is informational), ``None`` if absent or bad."""
    text = (pod["metadata"].get("annotations") or {}).get(job_wire.COMPLETION_INDEX)
    if text is None or not str(text).isdigit():
        return None
    return int(text)


def valid_index(pod: Pod, completions: int) -> int | None:
    index = completion_index(pod)
    return index if index is not None and index < completions else None


def is_ready(pod: Pod) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _parse(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def finished_time(pod: Pod) -> float:
    """getFinishedTime: latest container finish, else Ready turning False, else deletion, else creation."""
    status = pod.get("status") or {}
    latest: float | None = None
    for container in status.get("containerStatuses") or []:
        finished = ((container.get("state") or {}).get("terminated") or {}).get("finishedAt")
        if finished:
            moment = _parse(str(finished))
            latest = moment if latest is None else max(latest, moment)
    if latest is not None:
        return latest
    for condition in status.get("conditions") or []:
        ready_lost = condition.get("type") == "Ready" and condition.get("status") == "False"
        if ready_lost and condition.get("lastTransitionTime"):
            return _parse(str(condition["lastTransitionTime"]))
    meta = pod["metadata"]
    if meta.get("deletionTimestamp"):  # the deletion deadline minus the grace period: when it was asked
        return _parse(str(meta["deletionTimestamp"])) - float(meta.get("deletionGracePeriodSeconds") or 0)
    return _parse(str(meta["creationTimestamp"])) if meta.get("creationTimestamp") else 0.0


def restart_count(pod: Pod) -> int:
    status = pod.get("status") or {}
    statuses = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def removal_order_key(pod: Pod) -> tuple[Any, ...]:
    """controller.ActivePods order: pods sorted first are the first to delete."""
    status = pod.get("status") or {}
    rank = {"Pending": 0, "Unknown": 1, "Running": 2}
    created = str(pod["metadata"].get("creationTimestamp", ""))
    return (
        bool((pod.get("spec") or {}).get("nodeName")),
        rank.get(phase(pod), 1),
        is_ready(pod),
        -restart_count(pod),
        _negated(created),
        status.get("startTime") or "",
    )


def _negated(timestamp: str) -> tuple[int, ...]:
    """Newer creation sorts first (deleted first)."""
    return tuple(-ord(ch) for ch in timestamp)
