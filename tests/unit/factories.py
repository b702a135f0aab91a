"""Builders of TFJob and pod dicts shaped exactly as the Kubernetes API server returns them.

Tests of the pure modules need realistic input — camelCase keys, the labels and owner
references the training operator puts on its pods, container statuses with ``state`` and
``lastState`` — without a cluster.  These builders produce that JSON (the shape of
``ApiClient().sanitize_for_serialization(v1_pod)`` and of ``CustomObjectsApi`` results) from a
few keyword arguments, so each test states only what matters to it.  Every builder returns a
fresh dict that the test may further edit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from tfjob_provider.constants import (
    API_VERSION,
    DEFAULT_CONTAINER_NAME,
    KIND,
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    OPERATOR_NAME,
)

# What the training operator puts on the pods and services it creates that the provider never
# reads (so they live here, not in tfjob_provider.constants): the port it adds to every replica
# and the role label of the chief/master pod.
DEFAULT_PORT_NAME: Final = "tfjob-port"
DEFAULT_PORT: Final = 2222
LABEL_JOB_ROLE: Final = "training.kubeflow.org/job-role"
JOB_ROLE_MASTER: Final = "master"

JOB_NAME: Final = "mnist"
NAMESPACE: Final = "ml"
JOB_UID: Final = "6f1c2d3e-0000-4000-8000-00000000a001"
IMAGE: Final = "registry.example.com/ml/mnist:1.4"
#: A fixed "now" for deterministic deadline and timeout tests.
NOW: Final = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)

_DEFAULT: Final[Any] = object()


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(
    kind: str, status: str = "True", *, reason: str | None = None, message: str | None = None
) -> dict[str, Any]:
    """A TFJob status condition as the operator writes it."""
    return {
        "type": kind,
        "status": status,
        "reason": reason if reason is not None else f"TFJob{kind}",
        "message": message if message is not None else f"TFJob {NAMESPACE}/{JOB_NAME} is {kind.lower()}.",
        "lastUpdateTime": rfc3339(NOW - timedelta(minutes=5)),
        "lastTransitionTime": rfc3339(NOW - timedelta(minutes=5)),
    }


def make_tfjob(
    replicas: Mapping[str, int | None] | None = None,
    *,
    restart_policy: str | Mapping[str, str] | None = None,
    name: str = JOB_NAME,
    namespace: str = NAMESPACE,
    uid: str = JOB_UID,
    success_policy: str | None = None,
    run_policy: Mapping[str, Any] | None = None,
    dynamic_workers: bool | None = None,
    conditions: Iterable[Mapping[str, Any]] | None = None,
    start_time: datetime | None = _DEFAULT,
    replica_statuses: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, Any]:
    """A TFJob as stored (defaults not applied), with a status of a reconciled, created job.

    ``replicas`` maps replica keys (as written in the spec, case variants allowed) to counts;
    a count of None leaves ``replicas`` out (the operator defaults it to 1).  ``restart_policy``
    is one policy for all types or a per-key mapping; None leaves it out (default Never).
    ``conditions`` None gives ``[Created]``; pass ``[]`` and ``start_time=None`` for a job the
    operator has not reconciled.
    """
    replicas = {"Chief": 1, "Worker": 2} if replicas is None else replicas
    specs: dict[str, Any] = {}
    for key, count in replicas.items():
        policy = restart_policy.get(key) if isinstance(restart_policy, Mapping) else restart_policy
        spec: dict[str, Any] = {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": DEFAULT_CONTAINER_NAME,
                            "image": IMAGE,
                            "command": ["python", "/opt/train.py"],
                            "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
                        }
                    ]
                }
            }
        }
        if count is not None:
            spec["replicas"] = count
        if policy is not None:
            spec["restartPolicy"] = policy
        specs[key] = spec
    job_spec: dict[str, Any] = {
        "tfReplicaSpecs": specs,
        "runPolicy": {"suspend": False, **(run_policy or {})},
    }
    if success_policy is not None:
        job_spec["successPolicy"] = success_policy
    if dynamic_workers is not None:
        job_spec["enableDynamicWorker"] = dynamic_workers
    status: dict[str, Any] = {
        "conditions": [condition("Created", message=f"TFJob {name} is created.")]
        if conditions is None
        else [dict(item) for item in conditions],
        "replicaStatuses": {key: dict(value) for key, value in (replica_statuses or {}).items()},
    }
    if start_time is _DEFAULT:
        start_time = NOW - timedelta(minutes=10)
    if start_time is not None:
        status["startTime"] = rfc3339(start_time)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "resourceVersion": "4711",
            "generation": 1,
            "creationTimestamp": rfc3339(NOW - timedelta(minutes=11)),
            "labels": {"app.kubernetes.io/managed-by": "tfjob-provider"},
        },
        "spec": job_spec,
        "status": status,
    }


def _terminated(
    exit_code: int, *, reason: str | None, finished_at: datetime, message: str | None = None
) -> dict[str, Any]:
    state: dict[str, Any] = {
        "exitCode": exit_code,
        "reason": reason if reason is not None else ("Completed" if exit_code == 0 else "Error"),
        "startedAt": rfc3339(finished_at - timedelta(minutes=3)),
        "finishedAt": rfc3339(finished_at),
        "containerID": "containerd://" + "ab" * 32,
    }
    if message is not None:
        state["message"] = message
    return state


def make_pod(
    replica_type: str,
    index: int = 0,
    *,
    phase: str = "Running",
    exit_code: int | None = _DEFAULT,
    terminated_reason: str | None = None,
    terminated_message: str | None = None,
    waiting: str | None = None,
    waiting_message: str | None = None,
    restarts: int = 0,
    last_exit_code: int | None = None,
    last_reason: str | None = None,
    pod_reason: str | None = None,
    pod_message: str | None = None,
    disruption: str | None = None,
    deleting: bool = False,
    created: datetime | None = None,
    finished_at: datetime | None = None,
    unschedulable: str | None = None,
    init_exit_code: int | None = None,
    job_name: str = JOB_NAME,
    namespace: str = NAMESPACE,
    owner_uid: str | None = JOB_UID,
    restart_policy: str = "Never",
    job_role_master: bool | None = None,
    labels: Mapping[str, str | None] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """A replica pod created by the training operator for ``replica_type`` (canonical spelling).

    ``exit_code``: the ``tensorflow`` container's terminated exit code; by default 0 for a
    Succeeded pod and 1 for a Failed one; None gives a finished pod without container statuses.
    ``waiting``: a waiting reason for the container (ContainerCreating, ErrImagePull, …).
    ``restarts``/``last_exit_code``: in-place restarts and the previous run's exit code.
    ``labels`` entries override the operator's labels (a value of None removes the label).
    """
    lower = replica_type.lower()
    pod_name = name or f"{job_name}-{lower}-{index}"
    created = created or NOW - timedelta(minutes=9)
    finished_at = finished_at or NOW - timedelta(minutes=1)
    pod_labels: dict[str, str] = {
        LABEL_OPERATOR_NAME: OPERATOR_NAME,
        LABEL_JOB_NAME: job_name,
        LABEL_REPLICA_TYPE: lower,
        LABEL_REPLICA_INDEX: str(index),
    }
    master = job_role_master if job_role_master is not None else replica_type in ("Chief", "Master")
    if master:
        pod_labels[LABEL_JOB_ROLE] = JOB_ROLE_MASTER
    for key, value in (labels or {}).items():
        if value is None:
            pod_labels.pop(key, None)
        else:
            pod_labels[key] = value

    metadata: dict[str, Any] = {
        "name": pod_name,
        "namespace": namespace,
        "uid": f"pod-{lower}-{index}-0000-4000-8000",
        "resourceVersion": "5120",
        "creationTimestamp": rfc3339(created),
        "labels": pod_labels,
    }
    if owner_uid is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "name": job_name,
                "uid": owner_uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    if deleting:
        metadata["deletionTimestamp"] = rfc3339(NOW - timedelta(seconds=5))
        metadata["deletionGracePeriodSeconds"] = 30

    if exit_code is _DEFAULT:
        exit_code = 0 if phase == "Succeeded" else 1 if phase == "Failed" else None
    container: dict[str, Any] = {
        "name": DEFAULT_CONTAINER_NAME,
        "image": IMAGE,
        "imageID": "",
        "restartCount": restarts,
        "ready": phase == "Running" and not waiting,
        "started": phase == "Running" and not waiting,
        "state": {},
        "lastState": {},
    }
    if waiting is not None:
        container["state"] = {"waiting": {"reason": waiting}}
        if waiting_message is not None:
            container["state"]["waiting"]["message"] = waiting_message
    elif exit_code is not None and phase in ("Succeeded", "Failed"):
        container["state"] = {
            "terminated": _terminated(
                exit_code, reason=terminated_reason, finished_at=finished_at, message=terminated_message
            )
        }
        container["imageID"] = IMAGE + "@sha256:" + "0" * 64
    elif phase == "Running":
        container["state"] = {"running": {"startedAt": rfc3339(created + timedelta(seconds=20))}}
        container["imageID"] = IMAGE + "@sha256:" + "0" * 64
    elif phase in ("Pending", ""):
        container["state"] = {"waiting": {"reason": "ContainerCreating"}}
    if last_exit_code is not None:
        container["lastState"] = {
            "terminated": _terminated(
                last_exit_code, reason=last_reason, finished_at=NOW - timedelta(minutes=2)
            )
        }

    pod_conditions: list[dict[str, Any]] = []
    if unschedulable is not None:
        pod_conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": unschedulable,
                "lastTransitionTime": rfc3339(created),
            }
        )
    else:
        pod_conditions.append(
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(created)}
        )
    if disruption is not None:
        pod_conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": disruption,
                "message": f"{disruption} removed the pod",
                "lastTransitionTime": rfc3339(NOW - timedelta(seconds=30)),
            }
        )

    status: dict[str, Any] = {
        "phase": phase,
        "conditions": pod_conditions,
        "hostIP": "10.0.0.12",
        "podIP": "10.244.1.7",
        "qosClass": "Guaranteed",
        "startTime": rfc3339(created + timedelta(seconds=2)),
    }
    if not (exit_code is None and phase in ("Succeeded", "Failed")) and unschedulable is None:
        status["containerStatuses"] = [container]
    if init_exit_code is not None:
        status["initContainerStatuses"] = [
            {
                "name": "fetch-data",
                "image": "busybox:1.36",
                "restartCount": 0,
                "ready": False,
                "state": {"terminated": _terminated(init_exit_code, reason=None, finished_at=finished_at)},
                "lastState": {},
            }
        ]
        if phase in ("Failed", "Pending"):
            status["containerStatuses"] = [
                {**container, "state": {"waiting": {"reason": "PodInitializing"}}, "ready": False}
            ]
    if pod_reason is not None:
        status["reason"] = pod_reason
    if pod_message is not None:
        status["message"] = pod_message

    tf_config = {
        "cluster": {lower: [f"{job_name}-{lower}-{index}.{namespace}.svc:{DEFAULT_PORT}"]},
        "task": {"type": lower, "index": index},
        "environment": "cloud",
    }
    spec = {
        "containers": [
            {
                "name": DEFAULT_CONTAINER_NAME,
                "image": IMAGE,
                "command": ["python", "/opt/train.py"],
                "env": [{"name": "TF_CONFIG", "value": json.dumps(tf_config, sort_keys=True)}],
                "ports": [{"name": DEFAULT_PORT_NAME, "containerPort": DEFAULT_PORT, "protocol": "TCP"}],
            }
        ],
        "restartPolicy": "Never" if restart_policy == "ExitCode" else restart_policy,
        "schedulerName": "default-scheduler",
        "nodeName": None if phase in ("Pending", "") else "node-a",
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def pods_for(
    replicas: Mapping[str, int], *, phase: str = "Running", **overrides: Any
) -> list[dict[str, Any]]:
    """One pod per replica slot, all in the same ``phase``."""
    return [
        make_pod(replica_type, index, phase=phase, **overrides)
        for replica_type, count in replicas.items()
        for index in range(count)
    ]
