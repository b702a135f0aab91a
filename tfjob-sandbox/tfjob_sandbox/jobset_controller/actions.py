"""The actions one JobSet reconcile pass returns, applied in order by the driver."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CreateJob:
    manifest: dict[str, Any]


@dataclass(frozen=True)
class DeleteJob:
    """Delete a child Job with foreground propagation (its pods go first)."""

    name: str


@dataclass(frozen=True)
class SuspendJob:
    name: str


@dataclass(frozen=True)
class ResumeJob:
    """Clear the Job's ``status.startTime`` if set, then write ``pod_template`` and ``suspend: false``."""

    name: str
    pod_template: dict[str, Any]


@dataclass(frozen=True)
class CreateService:
    manifest: dict[str, Any]


@dataclass(frozen=True)
class WriteStatus:
    """Replace the JobSet's status; ``events`` are recorded only once the write succeeded."""

    status: dict[str, Any]
    events: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class DeleteJobSet:
    """``ttlSecondsAfterFinished`` expired: delete the JobSet (foreground)."""


Action = CreateJob | DeleteJob | SuspendJob | ResumeJob | CreateService | WriteStatus | DeleteJobSet


@dataclass(frozen=True)
class Outcome:
    actions: tuple[Action, ...]
    requeue_after: float | None = None
