"""The state of one reconcile pass, and the helpers every rule of the pass uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tfjob_sandbox.api import wire
from tfjob_sandbox.training_operator import conditions as cond
from tfjob_sandbox.training_operator.actions import Action, DeletePod, RecordEvent, WriteStatus
from tfjob_sandbox.training_operator.tf_config import LoopbackPorts
from tfjob_sandbox.training_operator.tfjob_spec import (
    defaulted_spec,
    has_chief_or_master,
)

#: Event reasons the controller itself records (``pkg/controller.v1/common``).
EXITED_WITH_CODE = "ExitedWithCode"
SET_POD_TEMPLATE_RESTART_POLICY = "SetPodTemplateRestartPolicy"
SUCCESSFUL_DELETE_JOB = "SuccessfulDeleteJob"
NORMAL = "Normal"
WARNING = "Warning"
RESTARTING_POLICIES = ("OnFailure", "Always")
BACKOFF_COUNTED_POLICIES = ("OnFailure", "Always", "ExitCode")


def format_time(moment: datetime) -> str:
    """``metav1.Time`` on the wire: RFC 3339, second precision, UTC ``Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def is_managed_elsewhere(job: Mapping[str, Any]) -> bool:
    """``runPolicy.managedBy`` names another controller: the operator ignores the job entirely."""
    manager = ((job.get("spec") or {}).get("runPolicy") or {}).get("managedBy")
    return manager is not None and manager != wire.MANAGED_BY_TRAINING_OPERATOR


def controls(job: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """The object carries this job's labels and a controller ownerReference to its uid (R2)."""
    metadata = obj.get("metadata") or {}
    labels = metadata.get("labels") or {}
    job_meta = job.get("metadata") or {}
    if labels.get(wire.LABEL_OPERATOR_NAME) != wire.OPERATOR_NAME:
        return False
    if labels.get(wire.LABEL_JOB_NAME) != str(job_meta.get("name", "")).replace("/", "-"):
        return False
    return any(
        ref.get("controller") is True and ref.get("uid") == job_meta.get("uid")
        for ref in metadata.get("ownerReferences") or []
    )


@dataclass
class PassState:
    """The inputs of one pass, what it derives from them, and the actions it has decided so far."""

    job: Mapping[str, Any]
    all_pods: Sequence[Mapping[str, Any]]
    all_services: Sequence[Mapping[str, Any]]
    now: datetime
    loopback_ports: LoopbackPorts | None
    cluster_domain: str
    actions: list[Action] = field(default_factory=list)

    def __post_init__(self) -> None:
        meta = self.job.get("metadata") or {}
        self.name: str = str(meta.get("name", ""))
        self.namespace: str = str(meta.get("namespace", "default"))
        self.uid: str = str(meta.get("uid", ""))
        self.spec = defaulted_spec(self.job.get("spec"))
        self.replicas: dict[str, dict[str, Any]] = {
            t: r for t, r in self.spec["tfReplicaSpecs"].items() if isinstance(r, dict)
        }
        self.run_policy: dict[str, Any] = self.spec["runPolicy"]
        self.stamp = format_time(self.now)
        self.pods = [p for p in self.all_pods if controls(self.job, p)]
        self.services = [s for s in self.all_services if controls(self.job, s)]
        self.stored_status: dict[str, Any] = dict(self.job.get("status") or {})

    def _pods_of_type(self, replica_type: str) -> list[Mapping[str, Any]]:
        lower = replica_type.lower()
        return [p for p in self.pods if labels_of(p).get(wire.LABEL_REPLICA_TYPE) == lower]

    def _labels(self, lower: str, index: int) -> dict[str, str]:
        return {
            wire.LABEL_OPERATOR_NAME: wire.OPERATOR_NAME,
            wire.LABEL_JOB_NAME: self.name.replace("/", "-"),
            wire.LABEL_REPLICA_TYPE: lower,
            wire.LABEL_REPLICA_INDEX: str(index),
        }

    def _is_master_role(self, replica_type: str, index: int) -> bool:
        if has_chief_or_master(self.replicas):
            return replica_type in wire.CHIEF_TYPES
        return replica_type == "Worker" and index == 0

    def _owner_reference(self) -> dict[str, Any]:
        return {
            "apiVersion": wire.API_VERSION,
            "kind": wire.KIND,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def _delete_pod(self, pod: Mapping[str, Any]) -> None:
        """``PodControl.DeletePod`` skips pods that are already terminating."""
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        if any(isinstance(a, DeletePod) and a.name == name_of(pod) for a in self.actions):
            return
        self.actions.append(DeletePod(name_of(pod)))

    def _event(self, event_type: str, reason: str, message: str) -> None:
        self.actions.append(RecordEvent(event_type, reason, message))

    def _write_if_changed(self, status: dict[str, Any]) -> None:
        if render_status(status) != render_status(self.stored_status):
            self._write(status)

    def _write(self, status: dict[str, Any]) -> None:
        self.actions.append(WriteStatus(render_status(status)))


def render_status(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status as Go serialises ``JobStatus``: empty fields and zero counts omitted."""
    rendered: dict[str, Any] = {}
    conditions = cond.conditions(status)
    if conditions:
        rendered["conditions"] = [dict(c) for c in conditions]
    replica_statuses = {}
    for replica_type, counts in sorted(replica_status_counts(status).items()):
        replica_statuses[replica_type] = {
            key: int(counts[key]) for key in ("active", "succeeded", "failed") if counts.get(key)
        }
    if replica_statuses:
        rendered["replicaStatuses"] = replica_statuses
    for key in ("startTime", "completionTime", "lastReconcileTime"):
        if status.get(key):
            rendered[key] = status[key]
    return rendered


def replica_status_counts(status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    value = status.get("replicaStatuses")
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(v, dict)}


def pod_slices(objects: Sequence[Mapping[str, Any]], replicas: int) -> list[list[Mapping[str, Any]]]:
    """``GetPodSlices``: slots ``0 .. max(replicas, highest index + 1) - 1`` (at least one)."""
    indexed: list[tuple[int, Mapping[str, Any]]] = []
    for obj in objects:
        try:
            index = int(labels_of(obj).get(wire.LABEL_REPLICA_INDEX, ""))
        except ValueError:
            continue
        if index >= 0:
            indexed.append((index, obj))
    size = max(max((i for i, _ in indexed), default=0) + 1, replicas)
    slots: list[list[Mapping[str, Any]]] = [[] for _ in range(size)]
    for index, obj in indexed:
        slots[index].append(obj)
    return slots


def count_pod(counts: dict[str, int], pod: Mapping[str, Any]) -> None:
    """``UpdateJobReplicaStatuses``: a Running pod being deleted counts as failed (R2)."""
    phase = phase_of(pod)
    if phase == "Running":
        key = "failed" if (pod.get("metadata") or {}).get("deletionTimestamp") else "active"
    elif phase == "Succeeded":
        key = "succeeded"
    elif phase == "Failed":
        key = "failed"
    else:
        return
    counts[key] = counts.get(key, 0) + 1


def tensorflow_exit_code(pod: Mapping[str, Any]) -> int:
    exit_code = wire.MAGIC_EXIT_CODE
    for container_status in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (container_status.get("state") or {}).get("terminated")
        if container_status.get("name") == wire.DEFAULT_CONTAINER_NAME and terminated:
            exit_code = int(terminated.get("exitCode", 0))
    return exit_code


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    terminating = (pod.get("metadata") or {}).get("deletionTimestamp")
    return phase_of(pod) not in ("Succeeded", "Failed") and not terminating


def phase_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase", ""))


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})
