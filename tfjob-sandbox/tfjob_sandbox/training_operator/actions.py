"""What a reconcile pass asks its driver to do, and the outcome that carries those actions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CreatePod:
    """Create this pod; on success the driver records ``SuccessfulCreatePod``."""

    manifest: dict[str, Any]


@dataclass(frozen=True)
class DeletePod:
    """Delete the pod (default grace); on success the driver records ``SuccessfulDeletePod``."""

    name: str


@dataclass(frozen=True)
class CreateService:
    manifest: dict[str, Any]


@dataclass(frozen=True)
class DeleteService:
    name: str


@dataclass(frozen=True)
class RecordEvent:
    """An event on the TFJob (component ``tfjob-controller``)."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class WriteStatus:
    """Replace ``status`` through the status subresource."""

    status: dict[str, Any]


@dataclass(frozen=True)
class DeleteJob:
    """``ttlSecondsAfterFinished`` has passed: delete the TFJob (dependents follow by ownerReference)."""


Action = CreatePod | DeletePod | CreateService | DeleteService | RecordEvent | WriteStatus | DeleteJob


@dataclass(frozen=True)
class Outcome:
    """What one reconcile pass decided: actions in the operator's order, and when to look again."""

    actions: tuple[Action, ...] = ()
    requeue_after: float | None = None
