"""Rules R2-R4 and R15: create and delete a job's pods and services, one slot per replica index."""

from __future__ import annotations

import copy
from typing import Any

from tfjob_sandbox.api import wire
from tfjob_sandbox.training_operator import conditions as cond
from tfjob_sandbox.training_operator.actions import (
    CreatePod,
    CreateService,
    DeleteService,
)
from tfjob_sandbox.training_operator.pass_state import (
    EXITED_WITH_CODE,
    NORMAL,
    RESTARTING_POLICIES,
    SET_POD_TEMPLATE_RESTART_POLICY,
    WARNING,
    PassState,
    count_pod,
    labels_of,
    name_of,
    phase_of,
    pod_slices,
)
from tfjob_sandbox.training_operator.tf_config import is_distributed, tf_config
from tfjob_sandbox.training_operator.tfjob_spec import (
    general_name,
    pod_spec,
    replica_count,
)


class ReplicaSync(PassState):
    """``ReconcilePods`` and ``ReconcileServices``."""

    def _reconcile_pods(self, status: dict[str, Any], replica_type: str, replica: dict[str, Any]) -> None:
        wanted = replica_count(replica)
        counts: dict[str, int] = {}
        status.setdefault("replicaStatuses", {})
        if not isinstance(status["replicaStatuses"], dict):
            status["replicaStatuses"] = {}
        status["replicaStatuses"][replica_type] = counts
        for index, slot in enumerate(pod_slices(self._pods_of_type(replica_type), wanted)):
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
                        f"Pod: {self.namespace}.{name_of(pod)} exited with code {exit_code}",
                    )
            if phase_of(pod) == "Failed":
                policy = replica.get("restartPolicy")
                if policy in RESTARTING_POLICIES or (policy == "ExitCode" and exit_code >= 128):
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
            count_pod(counts, pod)

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
        mine = [s for s in self.services if labels_of(s).get(wire.LABEL_REPLICA_TYPE) == lower]
        for index, slot in enumerate(pod_slices(mine, wanted)):
            if len(slot) > 1:
                continue
            if not slot:
                self._create_service(replica_type, replica, index)
            elif index >= wanted:
                self.actions.append(DeleteService(name_of(slot[0])))

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
