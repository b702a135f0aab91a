"""Ending pods: graceful deletion (SIGTERM, then SIGKILL after the grace period) and eviction."""

from __future__ import annotations

import contextlib
import signal

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import PODS
from tfjob_sandbox.kubelet import pod_status
from tfjob_sandbox.kubelet.pod_records import PodRecord
from tfjob_sandbox.kubelet.processes import ChildProcess
from tfjob_sandbox.kubelet.scripted_pods import ScriptedProcess
from tfjob_sandbox.kubelet.status_reporting import StatusReporting

DEFAULT_EVICTION_MESSAGE = "The node was low on resource: memory. "


class PodTermination(StatusReporting):
    """Stopping a pod's containers and writing its final status."""

    def evict(self, namespace: str, pod: str, *, message: str | None = None) -> None:
        """Evict ``pod`` as node-pressure eviction does: kill its containers, phase Failed/Evicted.

        ``message`` defaults to :data:`DEFAULT_EVICTION_MESSAGE`.
        """
        message = DEFAULT_EVICTION_MESSAGE if message is None else message
        record = self._record(namespace, pod)
        if record is None or record.terminal:
            raise ApiError(404, "NotFound", f'pod "{pod}" is not running on node {self.node_name}')
        record.reason, record.message = "Evicted", message
        record.extra_conditions = [
            {
                "type": "DisruptionTarget",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": self._now(),
                "reason": "TerminationByKubelet",
                "message": message,
            }
        ]
        self._pod_event(record, "Warning", "Evicted", message)
        self._kill_all(record, signal.SIGKILL, reason=None)
        self._finish_if_stopped(record, force_phase=pod_status.FAILED)

    def _begin_termination(self, uid: str) -> None:
        record = self._pods.get(uid)
        if record is None or record.terminating or record.frozen:
            return
        record.terminating = True
        self._waiting_for_node.pop(uid, None)
        for container in record.containers:
            container.cancel_timer()
        grace = int(record.pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        running = [c for c in record.containers if c.running]
        for container in running:
            self._pod_event(record, "Normal", "Killing", f"Stopping container {container.name}")
        self._kill_all(record, signal.SIGTERM if grace > 0 else signal.SIGKILL, reason=None)
        if running and grace > 0:
            assert self._loop is not None
            record.kill_timer = self._loop.call_later(grace, self._kill_all, record, signal.SIGKILL, None)
        self._finish_if_stopped(record)

    def _kill_all(self, record: PodRecord, sig: int, reason: str | None) -> None:
        for container in record.containers:
            if container.process is not None and container.process.running:
                if reason:
                    container.kill_reason = reason
                self._signal(container.process, sig)

    def _signal(self, process: ChildProcess | ScriptedProcess, sig: int) -> None:
        """Signal a container: a process's whole group, or a scripted container's timer."""
        if isinstance(process, ScriptedProcess):
            process.signal(sig)
        elif self._runner is not None:
            self._runner.signal_group(process, sig)

    def _finish_if_stopped(self, record: PodRecord, *, force_phase: str | None = None) -> None:
        """Once no process of a terminating/evicted pod runs: final status, then (if deleted) remove it."""
        if any(c.running for c in record.containers):
            return
        if record.kill_timer is not None:
            record.kill_timer.cancel()
            record.kill_timer = None
        for container in record.containers:
            container.cancel_timer()
            if "running" in container.state:
                container.state = {
                    "terminated": {"exitCode": 137, "reason": "Error", "finishedAt": self._now()}
                }
        if not record.terminal:
            phase = force_phase
            if phase is None:
                phase = (
                    pod_status.SUCCEEDED
                    if all(c.exited_ok for c in record.app_containers)
                    else pod_status.FAILED
                )
            record.phase = phase
        self._flush_one(record)
        if record.terminating:
            with contextlib.suppress(ApiError):
                self._store.delete(PODS, record.name, namespace=record.namespace, grace_period_seconds=0)
