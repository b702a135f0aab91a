"""Builders of JobSets, their child Jobs and pods as the JobSet and Job controllers label them.

The JobSet comes from the provider's own translation of a typed TFJob build, so the verdict
tests judge exactly what the provider would submit; the Jobs and pods carry the labels,
annotations and owner references of kubernetes-sigs/jobset (``labelAndAnnotateObject``) and of
the Job controller (completion index).  Pod bodies come from :func:`tests.unit.factories.make_pod`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from tests.unit.factories import NAMESPACE, NOW, make_pod, rfc3339
from tfjob_provider._jobset import names
from tfjob_provider._jobset.translation import tfjob_to_jobset
from tfjob_provider.manifest import build_tfjob

JOBSET_NAME: Final = "mnist"
JOBSET_UID: Final = "7a2d0c11-0000-4000-8000-00000000b001"
STARTED: Final = NOW - timedelta(minutes=10)


def make_jobset(
    *,
    conditions: Sequence[Mapping[str, Any]] = (),
    restarts: int = 0,
    status: Mapping[str, Any] | None = None,
    **build: Any,
) -> dict[str, Any]:
    """The JobSet the provider submits for ``build_tfjob(**build)``, as the API server returns it."""
    build.setdefault("name", JOBSET_NAME)
    build.setdefault("namespace", NAMESPACE)
    build.setdefault("image", "registry.example.com/ml/mnist:1.4")
    jobset = tfjob_to_jobset(build_tfjob(**build))
    jobset["metadata"].update(uid=JOBSET_UID, creationTimestamp=rfc3339(STARTED - timedelta(seconds=5)))
    replicated = [
        {"name": rjob["name"], "ready": 0, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0}
        for rjob in jobset["spec"]["replicatedJobs"]
    ]
    jobset["status"] = {
        "restarts": restarts,
        "replicatedJobsStatus": replicated,
        "conditions": [dict(condition) for condition in conditions],
        **(status or {}),
    }
    return jobset


def jobset_condition(
    kind: str, *, reason: str = "", message: str = "", at: datetime | None = None
) -> dict[str, Any]:
    """A JobSet status condition (metav1.Condition)."""
    return {
        "type": kind,
        "status": "True",
        "reason": reason or kind,
        "message": message or f"jobset {kind.lower()}",
        "lastTransitionTime": rfc3339(at or NOW - timedelta(seconds=30)),
    }


def job_uid(rjob: str, job_index: int = 0, attempt: int = 0) -> str:
    return f"job-{rjob}-{job_index}-{attempt}-0000-4000-8000"


def child_job(
    jobset: Mapping[str, Any],
    rjob: str,
    job_index: int = 0,
    *,
    attempt: int = 0,
    finished: str | None = None,
    reason: str = "",
    message: str = "",
    failed_at: datetime | None = None,
    counts: Mapping[str, int] | None = None,
    labels: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """A child Job of *jobset* for replicated Job *rjob*; ``finished`` is ``Complete``/``Failed``."""
    name = jobset["metadata"]["name"]
    template = next(item for item in jobset["spec"]["replicatedJobs"] if item["name"] == rjob)["template"]
    job_labels: dict[str, str] = {
        names.LABEL_JOBSET_NAME: name,
        names.LABEL_REPLICATED_JOB: rjob,
        names.LABEL_JOB_INDEX: str(job_index),
        names.LABEL_RESTART_ATTEMPT: str(attempt),
    }
    for key, value in (labels or {}).items():
        if value is None:
            job_labels.pop(key, None)
        else:
            job_labels[key] = value
    conditions: list[dict[str, Any]] = []
    if finished is not None:
        moment = rfc3339(failed_at or NOW - timedelta(minutes=1))
        if finished == names.JOB_FAILED:
            conditions.append(
                {
                    "type": names.JOB_FAILURE_TARGET,
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": moment,
                }
            )
        conditions.append(
            {
                "type": finished,
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": moment,
            }
        )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": names.job_name(name, rjob, job_index),
            "namespace": jobset["metadata"].get("namespace"),
            "uid": job_uid(rjob, job_index, attempt),
            "labels": job_labels,
            "annotations": dict(job_labels),
            "ownerReferences": [
                {
                    "apiVersion": names.API_VERSION,
                    "kind": names.KIND,
                    "name": name,
                    "uid": jobset["metadata"].get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": template["spec"],
        "status": {"startTime": rfc3339(STARTED), "conditions": conditions, **(counts or {})},
    }


def jobset_pod(
    rjob: str,
    index: int = 0,
    *,
    job_index: int = 0,
    attempt: int = 0,
    suffix: str = "abcde",
    jobset_name: str = JOBSET_NAME,
    **pod: Any,
) -> dict[str, Any]:
    """A pod of child Job ``<jobset>-<rjob>-<job_index>`` with completion index *index*.

    Other keywords go to :func:`make_pod` (phase, exit_code, restarts, deleting, created, …).
    """
    replica_type = {"ps": "PS"}.get(rjob, rjob.capitalize())
    hostname = names.pod_hostname(jobset_name, rjob, job_index, index)
    body = make_pod(replica_type, index, name=f"{hostname}-{suffix}", **pod)
    job = names.job_name(jobset_name, rjob, job_index)
    labels = {
        names.LABEL_JOBSET_NAME: jobset_name,
        names.LABEL_REPLICATED_JOB: rjob,
        names.LABEL_JOB_INDEX: str(job_index),
        names.LABEL_RESTART_ATTEMPT: str(attempt),
        names.COMPLETION_INDEX: str(index),
        "batch.kubernetes.io/job-name": job,
    }
    body["metadata"]["labels"] = labels
    body["metadata"]["annotations"] = {**labels}
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": job,
            "uid": job_uid(rjob, job_index, attempt),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    body["spec"]["hostname"] = hostname
    body["spec"]["subdomain"] = jobset_name
    return body
