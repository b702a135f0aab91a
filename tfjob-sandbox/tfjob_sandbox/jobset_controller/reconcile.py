"""``reconcile(jobset, jobs, service_exists, now)``: one pass of JobSet's ``Reconcile``, without I/O.

It follows ``pkg/controllers/jobset_controller.go`` (v0.7) step by step and returns the actions in
upstream's order; the status write comes last and carries the events its conditions emit.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from tfjob_sandbox.api import jobset_wire as wire
from tfjob_sandbox.jobset_controller import children as build
from tfjob_sandbox.jobset_controller.actions import (
    Action,
    CreateJob,
    CreateService,
    DeleteJob,
    DeleteJobSet,
    Outcome,
    ResumeJob,
    SuspendJob,
    WriteStatus,
)
from tfjob_sandbox.jobset_controller.child_jobs import (
    ChildJobs,
    classify,
    job_suspended,
    replicated_job_name,
    replicated_job_statuses,
)
from tfjob_sandbox.jobset_controller.conditions import finish_time, finished, update_condition
from tfjob_sandbox.jobset_controller.policies import decide_failure, success_policy_met

Obj = Mapping[str, Any]


def managed_elsewhere(jobset: Obj) -> bool:
    """``spec.managedBy`` names another controller (e.g. Kueue's MultiKueue): not ours to reconcile."""
    manager = (jobset.get("spec") or {}).get("managedBy")
    return manager is not None and manager != wire.CONTROLLER_NAME


def _format(now: datetime) -> str:
    return now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Pass:
    """One reconcile: the JobSet's status being edited, the actions and events so far."""

    def __init__(self, jobset: Obj, now: datetime) -> None:
        self.jobset = jobset
        self.spec: Obj = jobset.get("spec") or {}
        self.status: dict[str, Any] = copy.deepcopy(dict(jobset.get("status") or {}))
        self.status.setdefault("conditions", [])
        self.now = now
        self.actions: list[Action] = []
        self.events: list[tuple[str, str, str]] = []
        self.status_changed = False

    def set_condition(
        self, type_: str, status: str, reason_message: tuple[str, str], event_type: str
    ) -> None:
        reason, message = reason_message
        if update_condition(self.status["conditions"], type_, status, reason, message, now=_format(self.now)):
            self.status_changed = True
            self.events.append((event_type, reason, message))

    def fail(self, reason: str, message: str) -> None:
        self.set_condition(wire.FAILED, "True", (reason, message), "Warning")
        self.status["terminalState"] = wire.FAILED
        self.status_changed = True

    def complete(self) -> None:
        self.set_condition(wire.COMPLETED, "True", wire.ALL_JOBS_COMPLETED, "Normal")
        self.status["terminalState"] = wire.COMPLETED
        self.status_changed = True

    def outcome(self, requeue_after: float | None = None) -> Outcome:
        if self.status_changed:
            if not self.status["conditions"]:
                del self.status["conditions"]
            self.actions.append(WriteStatus(self.status, tuple(self.events)))
        return Outcome(tuple(self.actions), requeue_after)


def reconcile(jobset: Obj, jobs: Sequence[Obj], *, service_exists: bool, now: datetime) -> Outcome:
    """One reconcile of ``jobset`` given its child ``jobs`` and whether its headless Service exists."""
    if (jobset.get("metadata") or {}).get("deletionTimestamp") or managed_elsewhere(jobset):
        return Outcome(())
    state = _Pass(jobset, now)
    children = classify(jobs, int(state.status.get("restarts") or 0))
    statuses = replicated_job_statuses(state.spec, children)
    if statuses != state.status.get("replicatedJobsStatus"):
        state.status["replicatedJobsStatus"] = statuses
        state.status_changed = True
    if finished(state.status):
        state.actions.extend(_delete(children.active))
        return state.outcome(_ttl(state))
    state.actions.extend(_delete(children.previous))
    if children.failed:
        _execute_failure_policy(state, children)
        return state.outcome()
    if children.successful and success_policy_met(state.spec, children.successful):
        state.complete()
        return state.outcome()
    if build.dns_hostnames_enabled(jobset) and not service_exists:
        state.actions.append(CreateService(build.headless_service(jobset)))
    _reconcile_replicated_jobs(state, children, statuses)
    if bool(state.spec.get("suspend")):
        state.actions.extend(
            SuspendJob(str(j["metadata"]["name"])) for j in children.active if not job_suspended(j)
        )
        state.set_condition(wire.SUSPENDED, "True", wire.SUSPENDED_JOBS, "Normal")
    else:
        _resume(state, children, statuses)
    return state.outcome()


def _delete(jobs: Sequence[Obj]) -> list[Action]:
    return [
        DeleteJob(str(job["metadata"]["name"]))
        for job in jobs
        if not job["metadata"].get("deletionTimestamp")
    ]


def _ttl(state: _Pass) -> float | None:
    """Delete the JobSet once ``ttlSecondsAfterFinished`` has passed since it finished, else requeue."""
    ttl = state.spec.get("ttlSecondsAfterFinished")
    if ttl is None:
        return None
    finished_at = finish_time(state.status)
    if not finished_at:
        return None
    expires = datetime.strptime(finished_at, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=timezone.utc
    ).timestamp() + int(ttl)
    remaining = expires - state.now.timestamp()
    if remaining <= 0:
        state.actions.append(DeleteJobSet())
        return None
    return remaining


def _execute_failure_policy(state: _Pass, children: ChildJobs) -> None:
    decision = decide_failure(state.spec, state.status, children.failed)
    if decision.fail:
        state.fail(decision.reason, decision.message)
        return
    state.status["restarts"] = int(state.status.get("restarts") or 0) + 1
    if decision.count_towards_max:
        state.status["restartsCountTowardsMax"] = int(state.status.get("restartsCountTowardsMax") or 0) + 1
    state.status_changed = True
    if decision.event is not None:
        state.events.append(("Warning", *decision.event))


def _in_order(spec: Obj) -> bool:
    return (spec.get("startupPolicy") or {}).get("startupPolicyOrder") == wire.IN_ORDER


def _all_started(rjob: Obj, statuses: Sequence[Obj]) -> bool:
    status = next((s for s in statuses if s["name"] == rjob.get("name")), {})
    started = int(status.get("failed", 0)) + int(status.get("ready", 0)) + int(status.get("succeeded", 0))
    return int(rjob.get("replicas", 1)) == started


def _reconcile_replicated_jobs(state: _Pass, children: ChildJobs, statuses: Sequence[Obj]) -> None:
    """Create the missing Jobs; under ``InOrder``, one replicatedJob at a time until it is ready."""
    spec = state.spec
    suspended = bool(spec.get("suspend"))
    in_order = _in_order(spec) and not suspended
    existing = children.names()
    blocking = (spec.get("failurePolicy") or {}).get("restartStrategy") == wire.BLOCKING_RECREATE
    jobset_name = str(state.jobset["metadata"]["name"])
    for rjob in spec.get("replicatedJobs") or []:
        if in_order and _all_started(rjob, statuses):
            continue
        if not (blocking and children.previous):
            for index in range(int(rjob.get("replicas", 1))):
                if build.job_name(jobset_name, str(rjob["name"]), index) not in existing:
                    state.actions.append(CreateJob(build.construct_job(state.jobset, rjob, index)))
        if in_order:
            state.set_condition(wire.STARTUP_IN_PROGRESS, "True", wire.IN_ORDER_IN_PROGRESS, "Normal")
            return
    if in_order:
        state.set_condition(wire.STARTUP_COMPLETED, "True", wire.IN_ORDER_COMPLETED, "Normal")


def _resume(state: _Pass, children: ChildJobs, statuses: Sequence[Obj]) -> None:
    """Unsuspend suspended active Jobs (``resumeJobsIfNecessary``), in order under ``InOrder``."""
    by_rjob: dict[str, list[Obj]] = {}
    for job in children.active:
        by_rjob.setdefault(replicated_job_name(job), []).append(job)
    in_order = _in_order(state.spec)
    for rjob in state.spec.get("replicatedJobs") or []:
        if in_order and _all_started(rjob, statuses):
            continue
        for job in by_rjob.get(str(rjob.get("name")), []):
            if job_suspended(job):
                state.actions.append(
                    ResumeJob(str(job["metadata"]["name"]), build.resumed_pod_template(job, rjob))
                )
        if in_order:
            state.set_condition(wire.STARTUP_IN_PROGRESS, "True", wire.IN_ORDER_IN_PROGRESS, "Normal")
            return
    state.set_condition(wire.SUSPENDED, "False", wire.RESUMED_JOBS, "Normal")
