"""A JobSet, its Jobs and its pods, seen as the TFJob engine sees a TFJob and its pods.

:func:`read_jobset` maps every replicated Job onto a replica type (its name: ``chief``,
``worker``, …), every pod onto a replica slot (``job-index * completions + completion index``)
and the JobSet's conditions, and what its controller is about to write, onto the conditions the
training operator would hold — so that :func:`tfjob_provider.policy.decide` judges it with
exactly the TFJob rules.  Only the current run counts: Jobs of an older restart attempt, and
the pods a Job controller replaced, are left out.
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
from tfjob_provider._jobset.restarts import ON_FAILURE, restart_policy_of
from tfjob_provider._policy.readers import as_count, as_int, as_list, as_mapping, as_str, is_true, parse_time
from tfjob_provider._policy.tfjob import CANONICAL_TYPES
from tfjob_provider.constants import (
    CHIEF_TYPES,
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    OPERATOR_NAME,
)

_STARTED_PHASES: Final = frozenset({"Running", "Succeeded", "Failed"})
_JOBSET_NAME: Final = names.LABEL_JOBSET_NAME
_RESTART_ATTEMPT: Final = names.LABEL_RESTART_ATTEMPT
_REPLICATED_JOB: Final = names.LABEL_REPLICATED_JOB
_JOB_INDEX: Final = names.LABEL_JOB_INDEX
_COMPLETION_INDEX: Final = names.COMPLETION_INDEX
#: The pod metadata the engine reads, besides the labels this module writes.
_KEPT_METADATA: Final = (
    "name",
    "namespace",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
#: What the training operator writes for its two job-level failures, which the engine reads (R9, R10).
_BACKOFF_TEXT: Final = "has failed because it has reached the specified backoff limit"
_DEADLINE_TEXT: Final = "is running longer than specified deadline"


@dataclass(frozen=True)
class ReplicatedJob:
    """One replicated Job as a replica type: its name in the JobSet and in the TFJob view."""

    name: str
    replica_type: str
    jobs: int
    completions: int
    restart_policy: str
    job_spec: Mapping[str, Any]


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


def _replicated_jobs(spec: Mapping[str, Any]) -> dict[str, ReplicatedJob]:
    """Replicated Jobs by name; the first one of each canonical type keeps the type's name."""
    found: dict[str, ReplicatedJob] = {}
    taken: set[str] = set()
    for item in as_list(spec.get("replicatedJobs")):
        rjob = as_mapping(item)
        name = as_str(rjob.get("name"))
        if not name or name in found:
            continue
        job_spec = as_mapping(as_mapping(rjob.get("template")).get("spec"))
        completions = as_int(job_spec.get("completions"))
        if completions is None:
            completions = as_int(job_spec.get("parallelism"))
        canonical = CANONICAL_TYPES.get(name.lower())
        replica_type = canonical if canonical is not None and canonical not in taken else name
        taken.add(replica_type)
        replicas = as_int(rjob.get("replicas"))
        found[name] = ReplicatedJob(
            name=name,
            replica_type=replica_type,
            jobs=1 if replicas is None else max(replicas, 0),
            completions=1 if completions is None else max(completions, 0),
            restart_policy=restart_policy_of(job_spec),
            job_spec=job_spec,
        )
    return found


def _controller_uid(metadata: Mapping[str, Any]) -> str | None:
    references = metadata.get("ownerReferences")
    if type(references) is list and len(references) == 1 and type(references[0]) is dict:
        owner = references[0]  # the usual shape: the one reference of the owning controller
        return as_str(owner.get("uid")) if owner.get("controller") is True else None
    for item in as_list(references):
        reference = as_mapping(item)
        if reference.get("controller") is True:
            return as_str(reference.get("uid"))
    return None


def _annotation(metadata: Mapping[str, Any], key: str) -> Any:
    annotations = metadata.get("annotations")
    return annotations.get(key) if type(annotations) is dict else as_mapping(annotations).get(key)


def _index(value: object) -> int | None:
    """A non-negative index label (``"12"``), read without the generic reader on the hot path."""
    if type(value) is str and value.isdecimal():
        return int(value)
    parsed = as_int(value)
    return parsed if parsed is not None and parsed >= 0 else None


def _owned(metadata: Mapping[str, Any], *, owner_uid: str | None, owner_label: str, name: str | None) -> bool:
    """Owned by the given object: by controller UID where both are known, else by label."""
    controller = _controller_uid(metadata)
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
    run_policy = {
        "backoffLimit": min(limits) if limits else None,
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


def _slotted_pods(
    jobset: Mapping[str, Any],
    pods: Sequence[Any],
    rjobs: Mapping[str, ReplicatedJob],
    current: Mapping[str, ChildJob],
) -> list[dict[str, Any]]:
    """The current run's pods, one per replica slot (the newest: the Job controller's replacement).

    The loop runs once per pod per event, so it reads the usual shapes inline and parses a
    creation time only when two pods share a slot.
    """
    metadata = as_mapping(jobset.get("metadata"))
    name = as_str(metadata.get("name"))
    restarts = as_int(as_mapping(jobset.get("status")).get("restarts")) or 0
    current_uids = {job.uid for job in current.values() if job.uid}
    rjobs_lower = {rjob.replica_type: rjob.replica_type.lower() for rjob in rjobs.values()}
    newest: dict[tuple[str, str | None], tuple[int, Mapping[str, Any]]] = {}
    for order, pod in enumerate(pods):
        if type(pod) is not dict and not isinstance(pod, Mapping):
            continue
        pod_metadata = pod.get("metadata")
        if type(pod_metadata) is not dict:
            pod_metadata = as_mapping(pod_metadata)
        labels = pod_metadata.get("labels")
        if type(labels) is not dict:
            labels = as_mapping(labels)
        if labels.get(_JOBSET_NAME) != name:
            continue
        controller = _controller_uid(pod_metadata)
        if controller is not None and current_uids:
            if controller not in current_uids:
                continue  # a pod of a Job of an older run
        elif (_index(labels.get(_RESTART_ATTEMPT)) or 0) < restarts:
            continue
        rjob_name = labels.get(_REPLICATED_JOB)
        rjob = rjobs.get(rjob_name) if type(rjob_name) is str else None
        if rjob is None:
            continue
        slot = (rjob.replica_type, _slot_index(labels, pod_metadata, rjob.completions))
        if slot[1] is None:
            continue
        seen = newest.get(slot)
        if seen is None or _newer(pod_metadata, order, as_mapping(seen[1].get("metadata")), seen[0]):
            newest[slot] = (order, pod)
    mapped: list[dict[str, Any]] = []
    for (replica_type, index), (_, pod) in newest.items():
        pod_metadata = as_mapping(pod.get("metadata"))
        kept = {
            "name": pod_metadata.get("name"),
            "creationTimestamp": pod_metadata.get("creationTimestamp"),
            "labels": {
                LABEL_OPERATOR_NAME: OPERATOR_NAME,
                LABEL_JOB_NAME: name,
                LABEL_REPLICA_TYPE: rjobs_lower[replica_type],
                LABEL_REPLICA_INDEX: index,
            },
        }
        if pod_metadata.get("deletionTimestamp"):
            kept["deletionTimestamp"] = pod_metadata["deletionTimestamp"]
            kept["deletionGracePeriodSeconds"] = pod_metadata.get("deletionGracePeriodSeconds")
        mapped.append({"metadata": kept, "status": pod.get("status")})
    return mapped


def _is_canonical_index(text: str) -> bool:
    """``"7"``, not ``"07"`` or ``"+7"``: text that is already the index's label."""
    return text.isdecimal() and (text == "0" or text[0] != "0")


def _slot_index(labels: Mapping[str, Any], metadata: Mapping[str, Any], completions: int) -> str | None:
    """The replica index of a pod, as label text: ``job-index * completions + completion index``.

    The completion index is a label since Kubernetes 1.28 and an annotation before; with one Job
    per replica type (job index 0) its text is the replica index as it stands.
    """
    completion = labels.get(_COMPLETION_INDEX)
    if completion is None:
        completion = _annotation(metadata, _COMPLETION_INDEX)
    job_index = labels.get(_JOB_INDEX)
    if isinstance(completion, str) and _is_canonical_index(completion) and job_index == "0":
        return completion
    parsed_job, parsed_completion = _index(job_index), _index(completion)
    if parsed_job is None or parsed_completion is None:
        return None
    return str(parsed_job * completions + parsed_completion)


def _newer(
    metadata: Mapping[str, Any], order: int, seen_metadata: Mapping[str, Any], seen_order: int
) -> bool:
    """Whether a pod is newer than the one already in its slot (creation time, else list order)."""
    created = parse_time(metadata.get("creationTimestamp"))
    seen_created = parse_time(seen_metadata.get("creationTimestamp"))
    if created is not None and seen_created is not None and created != seen_created:
        return created > seen_created
    return order > seen_order


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
    rjobs = _replicated_jobs(spec)
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
    mapped = _slotted_pods(jobset, pods, rjobs, current)

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
