""":func:`read_jobset`: a JobSet, its Jobs and its pods as the TFJob and pods the engine judges, the
JobSet's conditions (and what its controller is about to write) as the operator's conditions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tfjob_provider._jobset import names
from tfjob_provider._jobset.policies import (
    ChildJob,
    FailureOutcome,
    failure_outcome,
    is_current,
    read_job,
    success_policy_met,
)
from tfjob_provider._jobset.replicas import ReplicatedJob, read_replicated_jobs
from tfjob_provider._jobset.restarts import ON_FAILURE
from tfjob_provider._jobset.slots import controller_uid, slotted_pods
from tfjob_provider._policy.readers import as_count, as_int, as_list, as_mapping, as_str, is_true, parse_time
from tfjob_provider.constants import CHIEF_TYPES

_STARTED_PHASES: Final = frozenset({"Running", "Succeeded", "Failed"})
#: What the training operator writes for its two job-level failures, which the engine reads (R9, R10).
_BACKOFF_TEXT: Final = "has failed because it has reached the specified backoff limit"
_DEADLINE_TEXT: Final = "is running longer than specified deadline"


@dataclass(frozen=True)
class JobSetView:
    """The inputs of :func:`decide` built from a JobSet, and what the JobSet itself says."""

    tfjob: dict[str, Any]
    pods: list[dict[str, Any]]
    display_name: str
    #: The JobSet carries Completed or Failed (written by its controller, not predicted here).
    finished: bool
    #: What the failure policy does about the current run's failed Jobs (None: none failed).
    failure: FailureOutcome | None
    #: ``RestartingJobSet`` is True: the controller is recreating the Jobs.
    restarting: bool


def _owned(metadata: Mapping[str, Any], *, owner_uid: str | None, owner_label: str, name: str | None) -> bool:
    """Owned by the given object: by controller UID where both are known, else by label."""
    controller = controller_uid(metadata)
    if owner_uid is not None and controller is not None:
        return controller == owner_uid
    return as_mapping(metadata.get("labels")).get(owner_label) == name


def _worker0_decides(rjob: ReplicatedJob | None) -> bool:
    """The Job itself succeeds when index 0 does (``successPolicy.rules[].succeededIndexes: "0"``)."""
    if rjob is None:
        return False
    for item in as_list(as_mapping(rjob.job_spec.get("successPolicy")).get("rules")):
        rule = as_mapping(item)
        if rule.get("succeededIndexes") == "0" and (as_int(rule.get("succeededCount")) or 1) == 1:
            return True
    return False


def _spec(jobset: Mapping[str, Any], rjobs: Mapping[str, ReplicatedJob]) -> dict[str, Any]:
    spec = as_mapping(jobset.get("spec"))
    replica_specs = {
        rjob.replica_type: {"replicas": rjob.jobs * rjob.completions, "restartPolicy": rjob.restart_policy}
        for rjob in rjobs.values()
    }
    workers = next((rjob for rjob in rjobs.values() if rjob.replica_type == "Worker"), None)
    has_chief = any(rjob.replica_type in CHIEF_TYPES for rjob in rjobs.values())
    limits = [
        limit
        for rjob in rjobs.values()
        if rjob.restart_policy == ON_FAILURE
        and (limit := as_int(rjob.job_spec.get("backoffLimit"))) is not None
        and limit < names.UNLIMITED_BACKOFF
    ]
    deadlines = [
        deadline
        for rjob in rjobs.values()
        if (deadline := as_int(rjob.job_spec.get("activeDeadlineSeconds"))) is not None
    ]
    managed_by = as_str(spec.get("managedBy"))
    annotated = as_int(
        as_mapping(as_mapping(jobset.get("metadata")).get("annotations")).get(names.ANNOTATION_BACKOFF_LIMIT)
    )
    run_policy = {
        "backoffLimit": annotated if annotated is not None else min(limits) if limits else None,
        "activeDeadlineSeconds": min(deadlines) if deadlines else None,
        "suspend": is_true(spec.get("suspend")),
        "managedBy": managed_by if managed_by and managed_by != names.JOBSET_CONTROLLER else None,
    }
    tfjob_spec: dict[str, Any] = {
        "tfReplicaSpecs": replica_specs,
        "runPolicy": {key: value for key, value in run_policy.items() if value is not None},
    }
    if not has_chief and not _worker0_decides(workers):
        tfjob_spec["successPolicy"] = "AllWorkers"
    return tfjob_spec


def _true_condition(jobset: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for item in as_list(as_mapping(jobset.get("status")).get("conditions")):
        condition = as_mapping(item)
        if condition.get("type") == kind and is_true(condition.get("status")):
            return condition
    return None


def _failure_time(job: ChildJob) -> str | None:
    """When the Job controller started failing *job* (FailureTarget, else Failed): its pods
    deleted after that moment are its cleanup, not the cause."""
    for item in as_list(as_mapping(job.job.get("status")).get("conditions")):
        condition = as_mapping(item)
        if condition.get("type") == names.JOB_FAILURE_TARGET and is_true(condition.get("status")):
            return as_str(condition.get("lastTransitionTime"))
    return job.failed_at.isoformat() if job.failed_at is not None else None


def _failed_condition(
    failure: FailureOutcome | None,
    written: Mapping[str, Any] | None,
    rjobs: Mapping[str, ReplicatedJob],
) -> dict[str, Any]:
    """The Failed condition the training operator would hold, worded so the engine finds the cause."""
    condition: dict[str, Any] = {"type": "Failed", "status": "True"}
    job = failure.job if failure is not None else None
    if job is not None:
        rjob = rjobs.get(job.replicated_job or "")
        if job.failure_reason == names.JOB_REASON_DEADLINE:
            message = f"Job {job.name} {_DEADLINE_TEXT}"
        elif (
            job.failure_reason == names.JOB_REASON_BACKOFF_LIMIT
            and rjob
            and rjob.restart_policy == ON_FAILURE
        ):
            message = f"Job {job.name} {_BACKOFF_TEXT}"
        else:
            message = f"its Job {job.name} failed ({job.failure_reason or 'no reason given'})"
        condition["message"] = message
        condition["lastTransitionTime"] = _failure_time(job)
    elif written is not None:
        condition["message"] = as_str(written.get("message")) or "the JobSet controller marked it Failed"
        condition["lastTransitionTime"] = written.get("lastTransitionTime")
    return condition


def read_jobset(jobset: Mapping[str, Any], jobs: Sequence[Any], pods: Sequence[Any]) -> JobSetView:
    """Build the TFJob view of *jobset* from its Jobs and pods (lists as the API server returns)."""
    metadata = as_mapping(jobset.get("metadata"))
    spec = as_mapping(jobset.get("spec"))
    status = as_mapping(jobset.get("status"))
    name = as_str(metadata.get("name"))
    namespace = as_str(metadata.get("namespace"))
    rjobs = read_replicated_jobs(spec)
    children = [
        read_job(as_mapping(job))
        for job in jobs
        if isinstance(job, Mapping)
        and _owned(
            as_mapping(job.get("metadata")),
            owner_uid=as_str(metadata.get("uid")),
            owner_label=names.LABEL_JOBSET_NAME,
            name=name,
        )
    ]
    current = {job.name: job for job in children if is_current(jobset, job)}
    mapped = slotted_pods(jobset, pods, rjobs, current)

    completed = _true_condition(jobset, names.CONDITION_COMPLETED)
    failed = _true_condition(jobset, names.CONDITION_FAILED)
    restarting = _true_condition(jobset, names.CONDITION_RESTARTING) is not None
    external = bool(as_str(spec.get("managedBy"))) and spec.get("managedBy") != names.JOBSET_CONTROLLER
    failure = failure_outcome(jobset, [job for job in current.values() if job.finished == names.JOB_FAILED])
    conditions: list[dict[str, Any]] = []
    if status.get("replicatedJobsStatus") or current or status.get("conditions"):
        conditions.append({"type": "Created", "status": "True"})
    started = any(as_str(as_mapping(pod.get("status")).get("phase")) in _STARTED_PHASES for pod in mapped)
    if started or restarting:
        conditions.append({"type": "Running", "status": "False"})  # it ran once: a missing pod is a restart
    if _true_condition(jobset, names.CONDITION_SUSPENDED) is not None:
        conditions.append({"type": "Suspended", "status": "True"})
    if restarting or (failure is not None and not failure.fails and failed is None and not external):
        conditions.append({"type": "Restarting", "status": "True"})
    predicted_failure = failure is not None and failure.fails and not external and completed is None
    if failed is not None or predicted_failure:
        conditions.append(_failed_condition(failure if failure and failure.fails else None, failed, rjobs))
    elif completed is not None or (
        not external and failure is None and success_policy_met(spec, list(current.values()))
    ):
        conditions.append({"type": "Succeeded", "status": "True"})

    start_times = [
        moment
        for job in current.values()
        if (moment := parse_time(as_mapping(job.job.get("status")).get("startTime"))) is not None
    ]
    tfjob_status: dict[str, Any] = {"conditions": conditions}
    if start_times:
        tfjob_status["startTime"] = min(start_times).isoformat()
    if not mapped and current:
        tfjob_status["replicaStatuses"] = _recorded_counts(current.values(), rjobs)
    tfjob = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {
            key: value
            for key, value in (
                ("name", name),
                ("namespace", namespace),
                ("creationTimestamp", metadata.get("creationTimestamp")),
            )
            if value
        },
        "spec": _spec(jobset, rjobs),
        "status": tfjob_status,
    }
    display = f"{namespace}/{name}" if namespace and name else name or "(unnamed)"
    return JobSetView(
        tfjob=tfjob,
        pods=mapped,
        display_name=display,
        finished=completed is not None or failed is not None,
        failure=failure,
        restarting=restarting,
    )


def _recorded_counts(jobs: Any, rjobs: Mapping[str, ReplicatedJob]) -> dict[str, dict[str, int]]:
    """Per replica type, the Jobs' own pod counts: the summary once the pods are gone."""
    counts: dict[str, dict[str, int]] = {}
    for job in jobs:
        rjob = rjobs.get(job.replicated_job or "")
        if rjob is None:
            continue
        job_status = as_mapping(job.job.get("status"))
        entry = counts.setdefault(rjob.replica_type, {"active": 0, "succeeded": 0, "failed": 0})
        for key in entry:
            entry[key] += as_count(job_status.get(key))
    return counts
