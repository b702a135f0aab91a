"""Rules R5-R12 and TTL: the job's conditions and replica counts, back-off and deadline failures, clean-up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfjob_sandbox.api import wire
from tfjob_sandbox.training_operator import conditions as cond
from tfjob_sandbox.training_operator.actions import (
    DeleteJob,
    DeleteService,
)
from tfjob_sandbox.training_operator.pass_state import (
    BACKOFF_COUNTED_POLICIES,
    NORMAL,
    PassState,
    name_of,
    parse_time,
    phase_of,
    pod_slices,
    replica_status_counts,
    tensorflow_exit_code,
)
from tfjob_sandbox.training_operator.tfjob_spec import (
    has_chief_or_master,
    replica_count,
)


class JobStatusRules(PassState):
    """``UpdateJobStatus``, the failure limits, and what a finished job deletes."""

    def _update_job_status(self, status: dict[str, Any]) -> None:
        worker0_completed = self._worker0_completed()
        if not status.get("startTime"):
            status["startTime"] = self.stamp
        restarting = cond.find(status, cond.RESTARTING)
        restarting_copy = dict(restarting) if restarting is not None else None
        chief_mode = has_chief_or_master(self.replicas)
        statuses = replica_status_counts(status)
        for replica_type in wire.REPLICA_TYPES:
            replica = self.replicas.get(replica_type)
            if replica is None:
                continue
            counts = statuses.get(replica_type, {})
            expected = replica_count(replica) - int(counts.get("succeeded", 0))
            running = int(counts.get("active", 0))
            failed = int(counts.get("failed", 0))
            if chief_mode:
                if replica_type in wire.CHIEF_TYPES:
                    if running > 0:
                        self._set_running(status)
                    if expected == 0:
                        self._set_succeeded(status)
            elif replica_type == "Worker":
                success_policy = self.spec.get("successPolicy")
                if expected == 0 or (worker0_completed and success_policy != "AllWorkers"):
                    self._set_succeeded(status)
                elif running > 0:
                    self._set_running(status)
            if failed <= 0:
                continue
            if restarting_copy is not None:
                cond.set_condition(
                    status,
                    cond.RESTARTING,
                    cond.TRUE,
                    reason=restarting_copy.get("reason", ""),
                    message=restarting_copy.get("message", ""),
                    now=self.stamp,
                )
                continue
            if self.spec.get("enableDynamicWorker") is True and replica_type == "Worker":
                continue
            message = (
                f"TFJob {self.namespace}/{self.name} has failed because {failed} "
                f"{replica_type} replica(s) failed."
            )
            self._event(NORMAL, cond.REASON_FAILED, message)
            if not status.get("completionTime"):
                status["completionTime"] = self.stamp
            cond.set_condition(
                status, cond.FAILED, cond.TRUE, reason=cond.REASON_FAILED, message=message, now=self.stamp
            )

    def _set_running(self, status: dict[str, Any]) -> None:
        cond.set_condition(
            status,
            cond.RUNNING,
            cond.TRUE,
            reason=cond.REASON_RUNNING,
            message=f"TFJob {self.namespace}/{self.name} is running.",
            now=self.stamp,
        )

    def _set_succeeded(self, status: dict[str, Any]) -> None:
        message = f"TFJob {self.namespace}/{self.name} successfully completed."
        self._event(NORMAL, cond.REASON_SUCCEEDED, message)
        if not status.get("completionTime"):
            status["completionTime"] = self.stamp
        cond.set_condition(
            status, cond.SUCCEEDED, cond.TRUE, reason=cond.REASON_SUCCEEDED, message=message, now=self.stamp
        )

    def _worker0_completed(self) -> bool:
        worker = self.replicas.get("Worker")
        if worker is None:
            return True
        slots = pod_slices(self._pods_of_type("Worker"), replica_count(worker))
        if not slots or len(slots[0]) != 1:
            return False
        pod = slots[0][0]
        return tensorflow_exit_code(pod) == 0 and phase_of(pod) == "Succeeded"

    def _backoff_failure(self, status: Mapping[str, Any], *, active_count: int) -> str | None:
        limit = self.run_policy.get("backoffLimit")
        if limit is None:
            return None
        limit = int(limit)
        failed_now = sum(1 for p in self.pods if phase_of(p) == "Failed")
        failed_before = sum(int(c.get("failed", 0)) for c in replica_status_counts(status).values())
        total_replicas = sum(replica_count(r) for r in self.replicas.values())
        # The work queue's retry count is always 0 (FakeWorkQueue), so "retries + 1 > limit".
        new_failure = failed_now > failed_before and active_count != total_replicas and limit < 1
        if new_failure or self._restarts_reach(limit):
            return f"Job {self.name} has failed because it has reached the specified backoff limit"
        return None

    def _restarts_reach(self, limit: int) -> bool:
        restarts = 0
        for replica_type, replica in self.replicas.items():
            if replica.get("restartPolicy") not in BACKOFF_COUNTED_POLICIES:
                continue
            for pod in self._pods_of_type(replica_type):
                if phase_of(pod) != "Running":
                    continue
                pod_status = pod.get("status") or {}
                for key in ("initContainerStatuses", "containerStatuses"):
                    restarts += sum(int(s.get("restartCount", 0)) for s in pod_status.get(key) or [])
        return restarts > 0 if limit == 0 else restarts >= limit

    def _deadline_failure(self, status: Mapping[str, Any]) -> str | None:
        deadline = self.run_policy.get("activeDeadlineSeconds")
        started = parse_time(status.get("startTime"))
        if deadline is None or started is None:
            return None
        if (self.now - started).total_seconds() >= int(deadline):
            return f"Job {self.name} has failed because it was active longer than specified deadline"
        return None

    def _delete_pods_and_services(self, status: Mapping[str, Any]) -> None:
        """``DeletePodsAndServices``: cleanPodPolicy applies only once the job is finished."""
        finished = cond.is_finished(status)
        policy = self.run_policy.get("cleanPodPolicy")
        if finished and policy == "None":
            return
        service_names = {
            name_of(s) for s in self.services if not (s.get("metadata") or {}).get("deletionTimestamp")
        }
        for pod in self.pods:
            if finished and policy == "Running" and phase_of(pod) not in ("Running", "Pending"):
                continue
            self._delete_pod(pod)
            if name_of(pod) in service_names:
                self.actions.append(DeleteService(name_of(pod)))
                service_names.discard(name_of(pod))

    def _cleanup_job(self, status: Mapping[str, Any]) -> None:
        ttl = self.run_policy.get("ttlSecondsAfterFinished")
        if ttl is None or self.run_policy.get("suspend") is True:
            return
        finished_at = parse_time(status.get("completionTime"))
        if finished_at is not None and (self.now - finished_at).total_seconds() > int(ttl):
            self.actions.append(DeleteJob())

    def _requeue_after(self, status: Mapping[str, Any]) -> float | None:
        if any(isinstance(a, DeleteJob) for a in self.actions):
            return None
        if cond.is_finished(status):
            ttl = self.run_policy.get("ttlSecondsAfterFinished")
            finished_at = parse_time(status.get("completionTime"))
            if ttl is None or finished_at is None:
                return None
            # "now > expiry" is strict, so look again just past it.
            return max(0.0, (finished_at - self.now).total_seconds() + int(ttl)) + 0.001
        deadline = self.run_policy.get("activeDeadlineSeconds")
        started = parse_time(status.get("startTime"))
        if deadline is None or started is None or self.run_policy.get("suspend") is True:
            return None
        return max(0.0, (started - self.now).total_seconds() + int(deadline))
