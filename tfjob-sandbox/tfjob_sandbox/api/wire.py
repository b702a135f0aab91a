"""The training operator's wire names (labels, replica types, defaults): the sandbox's own copy."""

from __future__ import annotations

from typing import Final

GROUP: Final = "kubeflow.org"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "TFJob"
PLURAL: Final = "tfjobs"
SINGULAR: Final = "tfjob"

#: The container whose exit code the operator reads and into which it injects TF_CONFIG.
DEFAULT_CONTAINER_NAME: Final = "tensorflow"
DEFAULT_PORT_NAME: Final = "tfjob-port"
DEFAULT_PORT: Final = 2222

#: Replica type keys in the order the operator walks them when it updates the job's status.
REPLICA_TYPES: Final = ("Chief", "Evaluator", "Master", "PS", "Worker")
CHIEF_TYPES: Final = ("Chief", "Master")

# Labels the operator puts on every pod and service it creates.
LABEL_OPERATOR_NAME: Final = "training.kubeflow.org/operator-name"
LABEL_JOB_NAME: Final = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE: Final = "training.kubeflow.org/replica-type"
LABEL_REPLICA_INDEX: Final = "training.kubeflow.org/replica-index"
LABEL_JOB_ROLE: Final = "training.kubeflow.org/job-role"
OPERATOR_NAME: Final = "tfjob-controller"
JOB_ROLE_MASTER: Final = "master"

#: Values of ``runPolicy.managedBy`` the operator's webhook accepts; only the first is reconciled by it.
MANAGED_BY_TRAINING_OPERATOR: Final = "kubeflow.org/training-operator"
MANAGED_BY_MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"

#: Exit code the operator assumes when the ``tensorflow`` container has no terminated state.
MAGIC_EXIT_CODE: Final = 0xBEEF
