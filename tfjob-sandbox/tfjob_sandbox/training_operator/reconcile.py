"""``reconcile(job, pods, services, now=...)``: one pass of the operator's TFJob controller, pure.

It returns the actions in the operator's order (R1-R16 of docs/concepts/rules.md) and when to look again.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tfjob_sandbox.training_operator import conditions as cond
from tfjob_sandbox.training_operator.actions import (
    Action,
    CreatePod,
    CreateService,
    DeleteJob,
    DeletePod,
    DeleteService,
    Outcome,
    RecordEvent,
    WriteStatus,
)
from tfjob_sandbox.training_operator.job_status import JobStatusRules
from tfjob_sandbox.training_operator.pass_state import (
    NORMAL,
    SUCCESSFUL_DELETE_JOB,
    WARNING,
    controls,
    format_time,
    is_managed_elsewhere,
    is_pod_active,
    name_of,
    parse_time,
    render_status,
    replica_status_counts,
)
from tfjob_sandbox.training_operator.replica_sync import ReplicaSync
from tfjob_sandbox.training_operator.tf_config import LoopbackPorts


def reconcile(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    services: Sequence[Mapping[str, Any]],
    *,
    now: datetime,
    add_created: bool = False,
    loopback_ports: LoopbackPorts | None = None,
    cluster_domain: str = "",
) -> Outcome:
    """One pass of the operator over ``job``.

    :param pods: candidate pods (those not controlled by the job are ignored).
    :param add_created: the create-event handler's ``Created`` condition is still to be added (R16).
    :param loopback_ports: per replica type, one local port per index for loopback TF_CONFIG.
    """
    metadata = job.get("metadata") or {}
    if metadata.get("deletionTimestamp") or is_managed_elsewhere(job):
        return Outcome()
    return _Pass(
        job, pods, services, now=now, loopback_ports=loopback_ports, cluster_domain=cluster_domain
    ).run(add_created=add_created)


class _Pass(JobStatusRules, ReplicaSync):
    """One pass: the order of the rules (``ReconcileJobs``)."""

    def run(self, *, add_created: bool) -> Outcome:
        status = copy.deepcopy(self.stored_status)
        if add_created:
            cond.set_condition(
                status,
                cond.CREATED,
                cond.TRUE,
                reason=cond.REASON_CREATED,
                message=f"TFJob {self.name} is created.",
                now=self.stamp,
            )
        if cond.is_finished(status):
            self._finished(status)
        elif self.run_policy.get("suspend") is True:
            self._suspended(status)
        else:
            self._active(status)
        return Outcome(tuple(self.actions), self._requeue_after(status))

    def _finished(self, status: dict[str, Any]) -> None:
        self._delete_pods_and_services(status)
        self._cleanup_job(status)
        if cond.is_true(status, cond.SUCCEEDED):
            for counts in replica_status_counts(status).values():
                counts["succeeded"] = counts.get("succeeded", 0) + counts.get("active", 0)
                counts["active"] = 0
        self._write_if_changed(status)

    def _suspended(self, status: dict[str, Any]) -> None:
        self._delete_pods_and_services(status)
        for counts in replica_status_counts(status).values():
            counts["active"] = 0
        message = f"TFJob {self.name} is suspended."
        if cond.is_true(status, cond.RUNNING):
            cond.set_condition(
                status,
                cond.RUNNING,
                cond.FALSE,
                reason=cond.REASON_SUSPENDED,
                message=message,
                now=self.stamp,
            )
        if not cond.is_true(status, cond.SUSPENDED):
            cond.set_condition(
                status,
                cond.SUSPENDED,
                cond.TRUE,
                reason=cond.REASON_SUSPENDED,
                message=message,
                now=self.stamp,
            )
        self._event(NORMAL, cond.REASON_SUSPENDED, message)
        self._write_if_changed(status)

    def _active(self, status: dict[str, Any]) -> None:
        if cond.is_true(status, cond.SUSPENDED):
            message = f"TFJob {self.name} is resumed."
            cond.set_condition(
                status,
                cond.SUSPENDED,
                cond.FALSE,
                reason=cond.REASON_RESUMED,
                message=message,
                now=self.stamp,
            )
            status["startTime"] = self.stamp
            self._event(NORMAL, cond.REASON_RESUMED, message)
        active_pods = [p for p in self.pods if is_pod_active(p)]
        self._record_abnormal_pods(active_pods)
        failure = self._backoff_failure(status, active_count=len(active_pods))
        failure = failure or self._deadline_failure(status)
        if failure is not None:
            if not status.get("completionTime"):
                status["completionTime"] = self.stamp
            self._event(NORMAL, cond.REASON_FAILED, failure)
            cond.set_condition(
                status, cond.FAILED, cond.TRUE, reason=cond.REASON_FAILED, message=failure, now=self.stamp
            )
            self._delete_pods_and_services(status)
            self._cleanup_job(status)
            self._write(status)
            return
        for replica_type, replica in self.replicas.items():
            self._reconcile_pods(status, replica_type, replica)
            self._reconcile_services(replica_type, replica)
        self._update_job_status(status)
        self._write_if_changed(status)

    def _record_abnormal_pods(self, active_pods: Sequence[Mapping[str, Any]]) -> None:
        """``RecordAbnormalPods``: warnings for active pods whose containers failed or wait with a message."""
        for pod in active_pods:
            pod_status = pod.get("status") or {}
            container_statuses = pod_status.get("containerStatuses") or pod_status.get(
                "initContainerStatuses"
            )
            if container_statuses:
                for container_status in container_statuses:
                    state = container_status.get("state") or {}
                    terminated, waiting = state.get("terminated"), state.get("waiting")
                    if terminated and int(terminated.get("exitCode", 0)) != 0:
                        self._event(
                            WARNING,
                            str(terminated.get("reason", "")),
                            f"Error pod {name_of(pod)} container {container_status.get('name')} "
                            f"exitCode: {terminated.get('exitCode')} terminated message: "
                            f"{terminated.get('message', '')}",
                        )
                    if waiting and waiting.get("message"):
                        self._event(
                            WARNING,
                            str(waiting.get("reason", "")),
                            f"Error pod {name_of(pod)} container {container_status.get('name')} "
                            f"waiting message: {waiting.get('message')}",
                        )
                continue
            pod_conditions = [c for c in pod_status.get("conditions") or [] if isinstance(c, dict)]
            if not pod_conditions:
                continue
            latest = max(pod_conditions, key=lambda c: str(c.get("lastTransitionTime") or ""))
            if latest.get("status") != "True":
                self._event(
                    WARNING,
                    str(latest.get("reason", "")),
                    f"Error pod {name_of(pod)} condition message: {latest.get('message', '')}",
                )


__all__ = [
    "SUCCESSFUL_DELETE_JOB",
    "Action",
    "CreatePod",
    "CreateService",
    "DeleteJob",
    "DeletePod",
    "DeleteService",
    "Outcome",
    "RecordEvent",
    "WriteStatus",
    "controls",
    "format_time",
    "is_managed_elsewhere",
    "parse_time",
    "reconcile",
    "render_status",
]
