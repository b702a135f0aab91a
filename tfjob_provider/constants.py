"""Names shared by every layer: the TFJob API coordinates and the training operator's labels
(operator v1.9).
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "kubeflow.org"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "TFJob"
PLURAL: Final = "tfjobs"

#: The container whose exit code the training operator reads (R3) and into which it injects TF_CONFIG.
DEFAULT_CONTAINER_NAME: Final = "tensorflow"

#: Canonical replica type keys, in the order the operator walks them in UpdateJobStatus (R1 step 6).
REPLICA_TYPES: Final = ("Chief", "Evaluator", "Master", "PS", "Worker")
CHIEF_TYPES: Final = ("Chief", "Master")

# Labels the training operator puts on every pod and service it creates (docs/concepts/rules.md).
LABEL_OPERATOR_NAME: Final = "training.kubeflow.org/operator-name"
LABEL_JOB_NAME: Final = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE: Final = "training.kubeflow.org/replica-type"
LABEL_REPLICA_INDEX: Final = "training.kubeflow.org/replica-index"
OPERATOR_NAME: Final = "tfjob-controller"

#: Values of ``runPolicy.managedBy`` the operator's webhook accepts; only the first is reconciled by it.
MANAGED_BY_TRAINING_OPERATOR: Final = "kubeflow.org/training-operator"
MANAGED_BY_MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"

#: Exit code the operator assumes when the ``tensorflow`` container has no terminated state (R3).
MAGIC_EXIT_CODE: Final = 0xBEEF

# Airflow identity stamped on every TFJob the provider submits.  Labels carry sanitised values
# (label syntax, <= 63 chars) so they can be selected on; annotations carry the exact values so a
# job can be matched to its task instance without ambiguity.
IDENTITY_PREFIX: Final = "tfjob-provider.airflow.apache.org"
LABEL_DAG_ID: Final = f"{IDENTITY_PREFIX}/dag-id"
LABEL_TASK_ID: Final = f"{IDENTITY_PREFIX}/task-id"
LABEL_RUN_ID: Final = f"{IDENTITY_PREFIX}/run-id"
LABEL_MAP_INDEX: Final = f"{IDENTITY_PREFIX}/map-index"
LABEL_TRY_NUMBER: Final = f"{IDENTITY_PREFIX}/try-number"
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE: Final = "tfjob-provider"
ANNOTATION_DAG_ID: Final = f"{IDENTITY_PREFIX}/dag-id"
ANNOTATION_TASK_ID: Final = f"{IDENTITY_PREFIX}/task-id"
ANNOTATION_RUN_ID: Final = f"{IDENTITY_PREFIX}/run-id"
ANNOTATION_MAP_INDEX: Final = f"{IDENTITY_PREFIX}/map-index"
ANNOTATION_TRY_NUMBER: Final = f"{IDENTITY_PREFIX}/try-number"

#: Where a user reads the provider's documentation: messages seen at run time link here rather
#: than to a path in a repository the user may never have cloned.  Also in ``[project.urls]``.
DOCS_URL: Final = "https://github.com/tfjob-provider/tfjob-provider/blob/main/docs"
RBAC_DOCS_URL: Final = f"{DOCS_URL}/guides/rbac.md"
