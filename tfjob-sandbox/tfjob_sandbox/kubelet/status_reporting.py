"""Writing pod statuses to the store, coalesced per event-loop iteration."""

from __future__ import annotations

from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import PODS
from tfjob_sandbox.kubelet import container_env, pod_status
from tfjob_sandbox.kubelet.node_state import KubeletState
from tfjob_sandbox.kubelet.pod_records import ContainerRecord, PodRecord, StalePod


class StatusReporting(KubeletState):
    """Pod status writes: mark a pod dirty, flush, build the status."""

    def _mark_dirty(self, record: PodRecord) -> None:
        self._dirty.add(record.uid)
        if not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        dirty, self._dirty = self._dirty, set()
        for uid in dirty:
            record = self._pods.get(uid)
            if record is not None:
                self._flush_one(record)

    def _flush_one(self, record: PodRecord) -> None:
        self._dirty.discard(record.uid)
        if record.gone or record.frozen:
            return
        if not record.terminal and not record.terminating:
            record.phase = pod_status.pod_phase(
                [self._container_status(record, c) for c in record.app_containers],
                restart_policy=record.restart_policy,
                init_statuses=[self._container_status(record, c) for c in record.init_containers],
            )
            if record.terminal:
                for container in record.containers:
                    container.cancel_timer()
        status = self._build_status(record)

        def write(pod: dict[str, Any]) -> None:
            self._check_uid(pod, record)
            pod["status"] = status

        try:
            record.pod = self._store.mutate(
                PODS, record.name, write, namespace=record.namespace, subresource="status"
            )
        except (ApiError, StalePod):
            return

    def _build_status(self, record: PodRecord) -> dict[str, Any]:
        now = self._now()
        app = [self._container_status(record, c) for c in record.app_containers]
        init = [self._container_status(record, c) for c in record.init_containers]
        previous = (record.pod.get("status") or {}).get("conditions") or []
        status: dict[str, Any] = {"phase": record.phase}
        status["conditions"] = pod_status.pod_conditions(
            previous,
            phase=record.phase,
            statuses=app,
            init_statuses=init,
            sandbox_ready=record.sandbox_ready and not record.terminal,
            now=now,
            extra=record.extra_conditions,
        )
        if record.reason:
            status["reason"] = record.reason
        if record.message:
            status["message"] = record.message
        status["hostIP"] = container_env.LOOPBACK_IP
        status["hostIPs"] = [{"ip": container_env.LOOPBACK_IP}]
        status["podIP"] = container_env.LOOPBACK_IP
        status["podIPs"] = [{"ip": container_env.LOOPBACK_IP}]
        if record.started_at:
            status["startTime"] = record.started_at
        if init:
            status["initContainerStatuses"] = init
        status["containerStatuses"] = app
        status["qosClass"] = (record.pod.get("status") or {}).get("qosClass", "BestEffort")
        return status

    def _container_status(self, record: PodRecord, container: ContainerRecord) -> dict[str, Any]:
        running = "running" in container.state
        status: dict[str, Any] = {
            "name": container.name,
            "state": container.state,
            "lastState": container.last_state,
            "ready": running and not record.terminating,
            "restartCount": container.restart_count,
            "image": container.image,
            "imageID": f"{container.image}@sha256:{'0' * 64}" if container.ever_started else "",
        }
        if container.container_id and (running or "terminated" in container.state):
            status["containerID"] = container.container_id
        status["started"] = running
        return status
