"""batch/v1 Job wire names (labels, annotations, condition types, reasons): the sandbox's own copy."""

from __future__ import annotations

from typing import Final

GROUP: Final = "batch"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "Job"

LABEL_PREFIX: Final = "batch.kubernetes.io/"
#: Label and annotation carrying an Indexed Job pod's index (the env var reads the annotation).
COMPLETION_INDEX: Final = LABEL_PREFIX + "job-completion-index"
CONTROLLER_UID: Final = LABEL_PREFIX + "controller-uid"
JOB_NAME: Final = LABEL_PREFIX + "job-name"
LEGACY_CONTROLLER_UID: Final = "controller-uid"
LEGACY_JOB_NAME: Final = "job-name"
#: Finalizer the controller keeps on its pods until it has counted them.
TRACKING_FINALIZER: Final = LABEL_PREFIX + "job-tracking"
#: Env var the controller appends to every container of an Indexed Job's pods.
COMPLETION_INDEX_ENV: Final = "JOB_COMPLETION_INDEX"

NON_INDEXED: Final = "NonIndexed"
INDEXED: Final = "Indexed"

# Condition types.
COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
SUSPENDED: Final = "Suspended"
FAILURE_TARGET: Final = "FailureTarget"
SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"

# Condition reasons.
REASON_BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
REASON_POD_FAILURE_POLICY: Final = "PodFailurePolicy"
REASON_FAILED_INDEXES: Final = "FailedIndexes"
REASON_MAX_FAILED_INDEXES_EXCEEDED: Final = "MaxFailedIndexesExceeded"
REASON_SUCCESS_POLICY: Final = "SuccessPolicy"
REASON_COMPLETIONS_REACHED: Final = "CompletionsReached"
REASON_JOB_SUSPENDED: Final = "JobSuspended"
REASON_JOB_RESUMED: Final = "JobResumed"

# Pod replacement policies.
TERMINATING_OR_FAILED: Final = "TerminatingOrFailed"
REPLACE_FAILED: Final = "Failed"

#: Indexed Jobs may not have more completions or parallelism than this.
MAX_PARALLELISM_INDEXED: Final = 100_000

#: Per-index failure counts an Indexed Job with ``backoffLimitPerIndex`` writes on its pods.
INDEX_FAILURE_COUNT: Final = LABEL_PREFIX + "job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT: Final = LABEL_PREFIX + "job-index-ignored-failure-count"
