"""A JobSet's child Jobs sorted as upstream's ``getChildJobs`` sorts them, and their readiness counts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tfjob_sandbox.api import jobset_wire as wire

Obj = Mapping[str, Any]


@dataclass
class ChildJobs:
    """The current run's Jobs by state, plus ``previous``: Jobs of an older restart attempt, to delete."""

    active: list[Obj] = field(default_factory=list)
    successful: list[Obj] = field(default_factory=list)
    failed: list[Obj] = field(default_factory=list)
    previous: list[Obj] = field(default_factory=list)

    def names(self) -> set[str]:
        everything = (*self.active, *self.successful, *self.failed, *self.previous)
        return {str(job["metadata"]["name"]) for job in everything}


def job_finished(job: Obj) -> str:
    """``Complete`` or ``Failed`` when that condition is True on the Job, else ``""`` (``JobFinished``)."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return ""


def restart_attempt(job: Obj) -> int | None:
    """The Job's ``restart-attempt`` label as an integer; None when missing or not a number."""
    value = ((job.get("metadata") or {}).get("labels") or {}).get(wire.RESTART_ATTEMPT)
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def classify(jobs: Iterable[Obj], restarts: int) -> ChildJobs:
    """Jobs of an older attempt go to ``previous``; the others by their finished condition.

    A Job whose ``restart-attempt`` label is not a number is treated as previous (upstream returns
    an error for the whole reconcile after marking it so).
    """
    children = ChildJobs()
    for job in sorted(jobs, key=lambda j: str(j["metadata"]["name"])):
        attempt = restart_attempt(job)
        if attempt is None or attempt < restarts:
            children.previous.append(job)
            continue
        state = job_finished(job)
        bucket = (
            children.failed
            if state == "Failed"
            else children.successful
            if state == "Complete"
            else (children.active)
        )
        bucket.append(job)
    return children


def replicated_job_name(job: Obj) -> str:
    return str(((job.get("metadata") or {}).get("labels") or {}).get(wire.REPLICATED_JOB_NAME) or "")


def job_suspended(job: Obj) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


def replicated_job_statuses(spec: Obj, children: ChildJobs) -> list[dict[str, Any]]:
    """``status.replicatedJobsStatus`` in spec order (``calculateReplicatedJobStatuses``)."""
    counts: dict[str, dict[str, int]] = {}
    for rjob in spec.get("replicatedJobs") or []:
        counts[str(rjob.get("name", ""))] = dict.fromkeys(
            ("ready", "succeeded", "failed", "active", "suspended"), 0
        )
    for job in children.active:
        bucket = counts.get(replicated_job_name(job))
        if bucket is None:
            continue
        job_spec = job.get("spec") or {}
        status = job.get("status") or {}
        expected = int(job_spec.get("parallelism", 1) or 0)
        completions = job_spec.get("completions")
        if completions is not None and int(completions) < expected:
            expected = int(completions)
        if int(status.get("succeeded") or 0) + int(status.get("ready") or 0) >= expected:
            bucket["ready"] += 1
        if int(status.get("active") or 0) > 0:
            bucket["active"] += 1
        if job_suspended(job):
            bucket["suspended"] += 1
    for key, jobs in (("succeeded", children.successful), ("failed", children.failed)):
        for job in jobs:
            bucket = counts.get(replicated_job_name(job))
            if bucket is not None:
                bucket[key] += 1
    return [{"name": name, **values} for name, values in counts.items()]
