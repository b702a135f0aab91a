"""JobSet's wire names (kubernetes-sigs/jobset v0.7): API, labels, condition reasons and messages.

The sandbox's own copy, written from JobSet's ``jobset_types.go`` and ``pkg/constants``; the
provider keeps its own (ADR 22).
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "jobset.x-k8s.io"
VERSION: Final = "v1alpha2"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "JobSet"
PLURAL: Final = "jobsets"
SINGULAR: Final = "jobset"

#: The reserved ``spec.managedBy`` of the JobSet controller; any other value is someone else's.
CONTROLLER_NAME: Final = "jobset.sigs.k8s.io/jobset-controller"
#: The component name on the controller's events.
EVENT_COMPONENT: Final = "jobset"

# Labels and annotations on every child Job and its pod template (both carry the same set).
JOBSET_NAME: Final = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME: Final = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS: Final = "jobset.sigs.k8s.io/replicatedjob-replicas"
GLOBAL_REPLICAS: Final = "jobset.sigs.k8s.io/global-replicas"
JOB_INDEX: Final = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX: Final = "jobset.sigs.k8s.io/job-global-index"
JOB_KEY: Final = "jobset.sigs.k8s.io/job-key"
RESTART_ATTEMPT: Final = "jobset.sigs.k8s.io/restart-attempt"
COORDINATOR: Final = "jobset.sigs.k8s.io/coordinator"

# Condition types.
COMPLETED: Final = "Completed"
FAILED: Final = "Failed"
SUSPENDED: Final = "Suspended"
STARTUP_IN_PROGRESS: Final = "StartupPolicyInProgress"
STARTUP_COMPLETED: Final = "StartupPolicyCompleted"

# Success and failure policy vocabulary.
OPERATOR_ALL: Final = "All"
OPERATOR_ANY: Final = "Any"
FAIL_JOBSET: Final = "FailJobSet"
RESTART_JOBSET: Final = "RestartJobSet"
RESTART_IGNORING_MAX: Final = "RestartJobSetAndIgnoreMaxRestarts"
RECREATE: Final = "Recreate"
BLOCKING_RECREATE: Final = "BlockingRecreate"
IN_ORDER: Final = "InOrder"
ANY_ORDER: Final = "AnyOrder"

# Condition reasons and messages (pkg/constants/constants.go).
ALL_JOBS_COMPLETED: Final = ("AllJobsCompleted", "jobset completed successfully")
FAILED_JOBS: Final = ("FailedJobs", "jobset failed due to one or more job failures")
REACHED_MAX_RESTARTS: Final = ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts")
FAIL_JOBSET_ACTION: Final = ("FailJobSetFailurePolicyAction", "applying FailJobSet failure policy action")
RESTART_JOBSET_ACTION: Final = (
    "RestartJobSetFailurePolicyAction",
    "applying RestartJobSet failure policy action",
)
RESTART_IGNORING_MAX_ACTION: Final = (
    "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction",
    "applying RestartJobSetAndIgnoreMaxRestarts failure policy action",
)
SUSPENDED_JOBS: Final = ("SuspendedJobs", "jobset is suspended")
RESUMED_JOBS: Final = ("ResumeJobs", "jobset is resumed")
IN_ORDER_IN_PROGRESS: Final = ("InOrderStartupPolicyInProgress", "in order startup policy is in progress")
IN_ORDER_COMPLETED: Final = ("InOrderStartupPolicyCompleted", "in order startup policy has completed")
#: Warning event reasons for creation failures (the event's message is the error).
JOB_CREATION_FAILED: Final = "JobCreationFailed"
HEADLESS_SERVICE_CREATION_FAILED: Final = "HeadlessServiceCreationFailed"

#: Reasons of a failed Job's ``Failed`` condition a failure policy rule may name.
JOB_FAILURE_REASONS: Final = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
)
