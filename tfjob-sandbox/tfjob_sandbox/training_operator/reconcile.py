"""One reconcile pass of the training operator's TFJob controller, as a pure function.

Given a TFJob, the pods and services it controls and the current time, :func:`reconcile` returns
the ordered list of things the operator would do (create/delete pods and services, record events,
write the status, delete the job for TTL) plus when to look again.  It follows the v1.9.4 code
path rule by rule (``ReconcileJobs`` → ``ReconcilePods``/``ReconcileServices`` →
``UpdateJobStatus``; rules R1-R16 of docs/rules.md), quirks included, because the sandbox exists to
behave like the clusters users have.  The I/O driver (:mod:`controller`) only applies the actions.

One deliberate difference, documented in ``docs/sandbox.md``: the pass reports the time left
until ``activeDeadlineSeconds`` so the driver can reconcile at the deadline, as the operator
intends; upstream the requeue goes to a no-op queue and the deadline waits for the next event
(kubeflow/trainer#3358).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tfjob_sandbox.api import wire
from tfjob_sandbox.training_operator import conditions as cond
from tfjob_sandbox.training_operator.tf_config import LoopbackPorts, is_distributed, tf_config
from tfjob_sandbox.training_operator.tfjob_spec import (
    defaulted_spec,
    general_name,
    has_chief_or_master,
    pod_spec,
    replica_count,
)

#: Event reasons the controller itself records (``pkg/controller.v1/common``).
EXITED_WITH_CODE = "ExitedWithCode"
SET_POD_TEMPLATE_RESTART_POLICY = "SetPodTemplateRestartPolicy"
SUCCESSFUL_DELETE_JOB = "SuccessfulDeleteJob"
NORMAL = "Normal"
WARNING = "Warning"

_RESTARTING_POLICIES = ("OnFailure", "Always")
_BACKOFF_COUNTED_POLICIES = ("OnFailure", "Always", "ExitCode")


@dataclass(frozen=True)
class CreatePod:
    """Create this pod; on success the driver records ``SuccessfulCreatePod``."""

    manifest: dict[str, Any]


@dataclass(frozen=True)
class DeletePod:
    """Delete the pod (default grace); on success the driver records ``SuccessfulDeletePod``."""

    name: str


@dataclass(frozen=True)
class CreateService:
    manifest: dict[str, Any]


@dataclass(frozen=True)
class DeleteService:
    name: str


@dataclass(frozen=True)
class RecordEvent:
    """An event on the TFJob (component ``tfjob-controller``)."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class WriteStatus:
    """Replace ``status`` through the status subresource."""

    status: dict[str, Any]


@dataclass(frozen=True)
class DeleteJob:
    """``ttlSecondsAfterFinished`` has passed: delete the TFJob (dependents follow by ownerReference)."""


Action = CreatePod | DeletePod | CreateService | DeleteService | RecordEvent | WriteStatus | DeleteJob


@dataclass(frozen=True)
class Outcome:
    """What one reconcile pass decided: actions in the operator's order, and when to look again."""

    actions: tuple[Action, ...] = ()
    requeue_after: float | None = None


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
    """One pass of the operator over ``job`` (see the module docstring).

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


@dataclass
class _Pass:
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

    # -- the pass -------------------------------------------------------------------------------

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
            for counts in _replica_statuses(status).values():
                counts["succeeded"] = counts.get("succeeded", 0) + counts.get("active", 0)
                counts["active"] = 0
        self._write_if_changed(status)

    def _suspended(self, status: dict[str, Any]) -> None:
        self._delete_pods_and_services(status)
        for counts in _replica_statuses(status).values():
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
        active_pods = [p for p in self.pods if _is_pod_active(p)]
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
                            f"Error pod {_name(pod)} container {container_status.get('name')} "
                            f"exitCode: {terminated.get('exitCode')} terminated message: "
                            f"{terminated.get('message', '')}",
                        )
                    if waiting and waiting.get("message"):
                        self._event(
                            WARNING,
                            str(waiting.get("reason", "")),
                            f"Error pod {_name(pod)} container {container_status.get('name')} "
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
                    f"Error pod {_name(pod)} condition message: {latest.get('message', '')}",
                )

    # -- R9 / R10 -------------------------------------------------------------------------------

    def _backoff_failure(self, status: Mapping[str, Any], *, active_count: int) -> str | None:
        limit = self.run_policy.get("backoffLimit")
        if limit is None:
            return None
        limit = int(limit)
        failed_now = sum(1 for p in self.pods if _phase(p) == "Failed")
        failed_before = sum(int(c.get("failed", 0)) for c in _replica_statuses(status).values())
        total_replicas = sum(replica_count(r) for r in self.replicas.values())
        # The work queue's retry count is always 0 (FakeWorkQueue), so "retries + 1 > limit".
        new_failure = failed_now > failed_before and active_count != total_replicas and limit < 1
        if new_failure or self._restarts_reach(limit):
            return f"Job {self.name} has failed because it has reached the specified backoff limit"
        return None

    def _restarts_reach(self, limit: int) -> bool:
        restarts = 0
        for replica_type, replica in self.replicas.items():
            if replica.get("restartPolicy") not in _BACKOFF_COUNTED_POLICIES:
                continue
            for pod in self._pods_of_type(replica_type):
                if _phase(pod) != "Running":
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

    # -- R2-R4, R15 -----------------------------------------------------------------------------

    def _reconcile_pods(self, status: dict[str, Any], replica_type: str, replica: dict[str, Any]) -> None:
        wanted = replica_count(replica)
        counts: dict[str, int] = {}
        status.setdefault("replicaStatuses", {})
        if not isinstance(status["replicaStatuses"], dict):
            status["replicaStatuses"] = {}
        status["replicaStatuses"][replica_type] = counts
        for index, slot in enumerate(_slices(self._pods_of_type(replica_type), wanted)):
            if len(slot) > 1:
                continue
            if not slot:
                self._create_pod(replica_type, replica, index)
                continue
            pod = slot[0]
            if index >= wanted:
                self._delete_pod(pod)
            exit_code = wire.MAGIC_EXIT_CODE
            for container_status in (pod.get("status") or {}).get("containerStatuses") or []:
                terminated = (container_status.get("state") or {}).get("terminated")
                if container_status.get("name") == wire.DEFAULT_CONTAINER_NAME and terminated:
                    exit_code = int(terminated.get("exitCode", 0))
                    self._event(
                        NORMAL,
                        EXITED_WITH_CODE,
                        f"Pod: {self.namespace}.{_name(pod)} exited with code {exit_code}",
                    )
            if _phase(pod) == "Failed":
                policy = replica.get("restartPolicy")
                if policy in _RESTARTING_POLICIES or (policy == "ExitCode" and exit_code >= 128):
                    self._delete_pod(pod)
                    message = f"job {self.name} is restarting because {replica_type} replica(s) failed."
                    self._event(WARNING, cond.REASON_RESTARTING, message)
                    cond.set_condition(
                        status,
                        cond.RESTARTING,
                        cond.TRUE,
                        reason=cond.REASON_RESTARTING,
                        message=message,
                        now=self.stamp,
                    )
                elif policy == "ExitCode":
                    message = f'job "{self.name}" is failing because "{replica_type}" replica(s) failed.'
                    self._event(WARNING, cond.REASON_FAILED, message)
                    cond.set_condition(
                        status,
                        cond.FAILED,
                        cond.TRUE,
                        reason=cond.REASON_FAILED,
                        message=message,
                        now=self.stamp,
                    )
            _count_pod(counts, pod)

    def _create_pod(self, replica_type: str, replica: dict[str, Any], index: int) -> None:
        lower = replica_type.lower()
        template = copy.deepcopy(replica.get("template") or {})
        template_meta = template.get("metadata") or {}
        labels = dict(template_meta.get("labels") or {})
        labels.update(self._labels(lower, index))
        if self._is_master_role(replica_type, index):
            labels[wire.LABEL_JOB_ROLE] = wire.JOB_ROLE_MASTER
        spec = template.get("spec") or {}
        if is_distributed(self.replicas):
            self._inject_tf_config(spec, replica_type, index)
        if self.loopback_ports is not None:
            self._set_loopback_port(spec, self.loopback_ports[lower][index])
        if spec.get("restartPolicy"):
            self._event(
                WARNING,
                SET_POD_TEMPLATE_RESTART_POLICY,
                "Restart policy in pod template will be overwritten by restart policy in replica spec",
            )
        policy = replica.get("restartPolicy")
        spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
        metadata: dict[str, Any] = {"name": general_name(self.name, replica_type, index), "labels": labels}
        if template_meta.get("annotations"):
            metadata["annotations"] = dict(template_meta["annotations"])
        if template_meta.get("finalizers"):
            metadata["finalizers"] = list(template_meta["finalizers"])
        metadata["ownerReferences"] = [self._owner_reference()]
        manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
        self.actions.append(CreatePod(manifest))

    def _inject_tf_config(self, spec: dict[str, Any], replica_type: str, index: int) -> None:
        value = tf_config(
            job_name=self.name,
            namespace=self.namespace,
            replica_specs=self.replicas,
            replica_type=replica_type,
            index=index,
            dynamic_worker=bool(self.spec.get("enableDynamicWorker")),
            cluster_domain=self.cluster_domain,
            loopback_ports=self.loopback_ports,
        )
        for container in spec.get("containers") or []:
            if container.get("name") == wire.DEFAULT_CONTAINER_NAME:
                container.setdefault("env", []).append({"name": "TF_CONFIG", "value": value})
                break

    @staticmethod
    def _set_loopback_port(spec: dict[str, Any], port: int) -> None:
        for container in spec.get("containers") or []:
            if container.get("name") != wire.DEFAULT_CONTAINER_NAME:
                continue
            for container_port in container.get("ports") or []:
                if container_port.get("name") == wire.DEFAULT_PORT_NAME:
                    container_port["containerPort"] = port

    def _reconcile_services(self, replica_type: str, replica: dict[str, Any]) -> None:
        lower = replica_type.lower()
        wanted = replica_count(replica)
        mine = [s for s in self.services if _labels(s).get(wire.LABEL_REPLICA_TYPE) == lower]
        for index, slot in enumerate(_slices(mine, wanted)):
            if len(slot) > 1:
                continue
            if not slot:
                self._create_service(replica_type, replica, index)
            elif index >= wanted:
                self.actions.append(DeleteService(_name(slot[0])))

    def _create_service(self, replica_type: str, replica: dict[str, Any], index: int) -> None:
        labels = self._labels(replica_type.lower(), index)
        ports = []
        for container in pod_spec(replica).get("containers") or []:
            if container.get("name") == wire.DEFAULT_CONTAINER_NAME:
                ports = [
                    {"name": p.get("name", ""), "port": p.get("containerPort")}
                    for p in container.get("ports") or []
                ]
                if self.loopback_ports is not None:
                    port = self.loopback_ports[replica_type.lower()][index]
                    ports = [dict(p, port=port) if p["name"] == wire.DEFAULT_PORT_NAME else p for p in ports]
                break
        manifest = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": general_name(self.name, replica_type, index),
                "labels": dict(labels),
                "ownerReferences": [self._owner_reference()],
            },
            "spec": {"clusterIP": "None", "selector": dict(labels), "ports": ports},
        }
        self.actions.append(CreateService(manifest))

    # -- R5-R8 ----------------------------------------------------------------------------------

    def _update_job_status(self, status: dict[str, Any]) -> None:
        worker0_completed = self._worker0_completed()
        if not status.get("startTime"):
            status["startTime"] = self.stamp
        restarting = cond.find(status, cond.RESTARTING)
        restarting_copy = dict(restarting) if restarting is not None else None
        chief_mode = has_chief_or_master(self.replicas)
        statuses = _replica_statuses(status)
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
        slots = _slices(self._pods_of_type("Worker"), replica_count(worker))
        if not slots or len(slots[0]) != 1:
            return False
        pod = slots[0][0]
        return _tensorflow_exit_code(pod) == 0 and _phase(pod) == "Succeeded"

    # -- R11, R12, TTL --------------------------------------------------------------------------

    def _delete_pods_and_services(self, status: Mapping[str, Any]) -> None:
        """``DeletePodsAndServices``: cleanPodPolicy applies only once the job is finished."""
        finished = cond.is_finished(status)
        policy = self.run_policy.get("cleanPodPolicy")
        if finished and policy == "None":
            return
        service_names = {
            _name(s) for s in self.services if not (s.get("metadata") or {}).get("deletionTimestamp")
        }
        for pod in self.pods:
            if finished and policy == "Running" and _phase(pod) not in ("Running", "Pending"):
                continue
            self._delete_pod(pod)
            if _name(pod) in service_names:
                self.actions.append(DeleteService(_name(pod)))
                service_names.discard(_name(pod))

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

    # -- helpers --------------------------------------------------------------------------------

    def _pods_of_type(self, replica_type: str) -> list[Mapping[str, Any]]:
        lower = replica_type.lower()
        return [p for p in self.pods if _labels(p).get(wire.LABEL_REPLICA_TYPE) == lower]

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
        if any(isinstance(a, DeletePod) and a.name == _name(pod) for a in self.actions):
            return
        self.actions.append(DeletePod(_name(pod)))

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
    for replica_type, counts in sorted(_replica_statuses(status).items()):
        replica_statuses[replica_type] = {
            key: int(counts[key]) for key in ("active", "succeeded", "failed") if counts.get(key)
        }
    if replica_statuses:
        rendered["replicaStatuses"] = replica_statuses
    for key in ("startTime", "completionTime", "lastReconcileTime"):
        if status.get(key):
            rendered[key] = status[key]
    return rendered


def _replica_statuses(status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    value = status.get("replicaStatuses")
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(v, dict)}


def _slices(objects: Sequence[Mapping[str, Any]], replicas: int) -> list[list[Mapping[str, Any]]]:
    """``GetPodSlices``: slots ``0 .. max(replicas, highest index + 1) - 1`` (at least one)."""
    indexed: list[tuple[int, Mapping[str, Any]]] = []
    for obj in objects:
        try:
            index = int(_labels(obj).get(wire.LABEL_REPLICA_INDEX, ""))
        except ValueError:
            continue
        if index >= 0:
            indexed.append((index, obj))
    size = max(max((i for i, _ in indexed), default=0) + 1, replicas)
    slots: list[list[Mapping[str, Any]]] = [[] for _ in range(size)]
    for index, obj in indexed:
        slots[index].append(obj)
    return slots


def _count_pod(counts: dict[str, int], pod: Mapping[str, Any]) -> None:
    """``UpdateJobReplicaStatuses``: a Running pod being deleted counts as failed (R2)."""
    phase = _phase(pod)
    if phase == "Running":
        key = "failed" if (pod.get("metadata") or {}).get("deletionTimestamp") else "active"
    elif phase == "Succeeded":
        key = "succeeded"
    elif phase == "Failed":
        key = "failed"
    else:
        return
    counts[key] = counts.get(key, 0) + 1


def _tensorflow_exit_code(pod: Mapping[str, Any]) -> int:
    exit_code = wire.MAGIC_EXIT_CODE
    for container_status in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (container_status.get("state") or {}).get("terminated")
        if container_status.get("name") == wire.DEFAULT_CONTAINER_NAME and terminated:
            exit_code = int(terminated.get("exitCode", 0))
    return exit_code


def _is_pod_active(pod: Mapping[str, Any]) -> bool:
    terminating = (pod.get("metadata") or {}).get("deletionTimestamp")
    return _phase(pod) not in ("Succeeded", "Failed") and not terminating


def _phase(obj: Mapping[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase", ""))


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


__all__ = [
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
