"""What a Job sync pass asks its driver to do, in order, and when to look at the Job again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CreatePod:
    """Create this pod (``generateName``); the driver records ``SuccessfulCreate`` or ``FailedCreate``."""

    manifest: dict[str, Any]


@dataclass(frozen=True)
class DeletePod:
    """Delete the pod; the driver records ``SuccessfulDelete`` or ``FailedDelete``."""

    name: str


@dataclass(frozen=True)
class RemoveFinalizer:
    """Drop the job-tracking finalizer from the pod (it has been counted, or needs no counting)."""

    name: str
    uid: str


@dataclass(frozen=True)
class RecordEvent:
    """An event on the Job (component ``job-controller``)."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class WriteStatus:
    """Replace the Job's ``status`` through the status subresource."""

    status: dict[str, Any]


@dataclass(frozen=True)
class DeleteJob:
    """``ttlSecondsAfterFinished`` has passed: delete the Job in the foreground (the TTL controller)."""


Action = CreatePod | DeletePod | RemoveFinalizer | RecordEvent | WriteStatus | DeleteJob


@dataclass(frozen=True)
class Outcome:
    """One pass's actions, when to sync again (seconds) and the failure back-off record to keep."""

    actions: tuple[Action, ...] = ()
    requeue_after: float | None = None
    backoff: BackoffRecord | None = None


@dataclass(frozen=True)
class BackoffRecord:
    """Pod failures since the last success and when the latest of them finished (epoch seconds)."""

    failures_after_last_success: int = 0
    last_failure_time: float | None = None


#: No failures recorded.
NO_BACKOFF = BackoffRecord()
