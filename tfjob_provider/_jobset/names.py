"""JobSet and Indexed Job names: API coordinates, labels, conditions, hostnames (values from
kubernetes-sigs/jobset ``api/jobset/v1alpha2`` and ``pkg/constants``, and batch/v1).
"""

from __future__ import annotations

from typing import Final

from tfjob_provider.constants import IDENTITY_PREFIX

GROUP: Final = "jobset.x-k8s.io"
VERSION: Final = "v1alpha2"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "JobSet"
PLURAL: Final = "jobsets"

#: ``spec.managedBy`` of JobSets the built-in JobSet controller reconciles (also when unset).
JOBSET_CONTROLLER: Final = "jobset.sigs.k8s.io/jobset-controller"

# Labels (and annotations of the same name) the JobSet controller puts on its Jobs and their pods.
LABEL_JOBSET_NAME: Final = "jobset.sigs.k8s.io/jobset-name"
LABEL_REPLICATED_JOB: Final = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_JOB_INDEX: Final = "jobset.sigs.k8s.io/job-index"
#: ``status.restarts`` of the JobSet when the Job was made; Jobs of older attempts are deleted.
LABEL_RESTART_ATTEMPT: Final = "jobset.sigs.k8s.io/restart-attempt"

#: The Job controller writes each Indexed Job pod's index here (annotation, and label since 1.28).
COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"

# JobSet conditions (``JobSetConditionType``) and batch/v1 Job conditions.
CONDITION_COMPLETED: Final = "Completed"
CONDITION_FAILED: Final = "Failed"
CONDITION_SUSPENDED: Final = "Suspended"
CONDITION_RESTARTING: Final = "RestartingJobSet"
JOB_COMPLETE: Final = "Complete"
JOB_FAILED: Final = "Failed"
#: Written by the Job controller before it terminates a failing Job's pods (Kubernetes 1.31+).
JOB_FAILURE_TARGET: Final = "FailureTarget"
JOB_REASON_BACKOFF_LIMIT: Final = "BackoffLimitExceeded"
JOB_REASON_DEADLINE: Final = "DeadlineExceeded"

#: The TFJob's ``runPolicy.backoffLimit``, on the JobSet: a job-wide limit no Job field holds, which
#: the verdict applies as the training operator does (R9).
ANNOTATION_BACKOFF_LIMIT: Final = f"{IDENTITY_PREFIX}/backoff-limit"

#: The largest ``backoffLimit`` (int32): "no limit", as the training operator has without one.
UNLIMITED_BACKOFF: Final = 2**31 - 1


def job_name(jobset: str, replicated_job: str, job_index: int) -> str:
    """``<jobset>-<replicatedJob>-<jobIndex>``: the name the JobSet controller gives a child Job."""
    return f"{jobset}-{replicated_job}-{job_index}"


def pod_hostname(jobset: str, replicated_job: str, job_index: int, pod_index: int) -> str:
    """``<jobset>-<replicatedJob>-<jobIndex>-<podIndex>``: an Indexed Job pod's hostname."""
    return f"{job_name(jobset, replicated_job, job_index)}-{pod_index}"


def pod_address(jobset: str, subdomain: str, replicated_job: str, pod_index: int) -> str:
    """``<hostname>.<subdomain>``: where a replica is reached through the JobSet's headless service.

    Resolved through the pod's DNS search path (``<namespace>.svc.<cluster domain>``), so it does
    not depend on the namespace or the cluster domain.  Job index 0: one Job per replica type.
    """
    return f"{pod_hostname(jobset, replicated_job, 0, pod_index)}.{subdomain}"
