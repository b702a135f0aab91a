"""Faults a node inflicts on its pods: node loss, cordon, unpullable images, OOM kills, kills."""

from __future__ import annotations

import contextlib
import signal
from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import PODS
from tfjob_sandbox.kubelet import pod_status
from tfjob_sandbox.kubelet.image_pulls import check_cause
from tfjob_sandbox.kubelet.node_state import NODE_CONTROLLER
from tfjob_sandbox.kubelet.pod_records import PodRecord, StalePod
from tfjob_sandbox.kubelet.scheduling import Scheduling
from tfjob_sandbox.kubelet.scripted_pods import ScriptedProcess

_UNKNOWN_STATUS_MESSAGE = "The container could not be located when the pod was terminated"


class NodeFaults(Scheduling):
    """The fault methods of the node, and what a lost or restarted node does to its pods."""

    def lose_node(self) -> None:
        """The node stops responding; the control plane marks and deletes its pods (docs/sandbox.md)."""
        self._node_lost = True
        for record in list(self._pods.values()):
            if record.terminal or not self._is_bound(record):
                continue
            record.frozen = True
            for container in record.containers:
                container.cancel_timer()
                if container.process is not None and container.process.running:
                    self._signal(container.process, signal.SIGKILL)
            self._mark_node_lost(record)

    def restore_node(self) -> None:
        """The lost node comes back: its kubelet finishes the pods marked for deletion, runs new ones."""
        self._node_lost = False
        for record in list(self._pods.values()):
            if record.frozen:
                record.frozen = False
                self._finish_lost_pod(record)
        self._retry_unscheduled()

    def set_image_unpullable(
        self, image: str, unpullable: bool = True, *, cause: str = "not-found", failures: int | None = None
    ) -> None:
        """Make pulls of ``image`` fail (ErrImagePull → ImagePullBackOff) until reset.

        ``cause`` picks the registry's answer and so the message a node reports (one of
        :data:`~tfjob_sandbox.kubelet.image_pulls.PULL_FAILURE_CAUSES`: ``not-found`` and
        ``access-denied`` never clear on a real cluster; ``rate-limited``, ``server-error``,
        ``timeout``, ``connection-refused`` and ``tls-handshake-timeout`` do).  ``failures``: only
        the next N pulls fail, then the registry recovers by itself; None: until lifted.
        """
        if not unpullable:
            self._unpullable.pop(image, None)
            return
        check_cause(cause)
        if failures is not None and (
            isinstance(failures, bool) or not isinstance(failures, int) or failures < 1
        ):
            raise ValueError(f"failures must be a positive number of pulls or None, got {failures!r}")
        self._unpullable[image] = [cause, failures]
        self._present_images.discard(image)

    def end_scripted(self, namespace: str, pod: str, *, exit_code: int = 0) -> int:
        """End the running scripted app containers of ``pod`` now with ``exit_code`` (a test
        facility: a benchmark decides when each job finishes).  Returns how many were ended."""
        record = self._record(namespace, pod)
        ended = 0
        for container in record.app_containers if record is not None else []:
            if isinstance(container.process, ScriptedProcess) and container.process.running:
                container.process.exit(exit_code)
                ended += 1
        return ended

    def set_unschedulable(self, unschedulable: bool = True) -> None:
        """Cordon (or uncordon) the node: new pods stay Pending with PodScheduled=False."""
        self._unschedulable = unschedulable
        if not unschedulable:
            self._retry_unscheduled()

    def oom_kill(self, namespace: str, pod: str, container: str = "tensorflow") -> None:
        """SIGKILL a container as the kernel's OOM killer would: exit 137, reason OOMKilled."""
        record = self._record(namespace, pod)
        match = next((c for c in record.containers if c.name == container), None) if record else None
        if record is None or match is None or not match.running:
            raise ApiError(404, "NotFound", f'container "{container}" of pod "{pod}" is not running')
        match.kill_reason = "OOMKilled"
        assert match.process is not None
        self._signal(match.process, signal.SIGKILL)

    def kill_process(
        self, namespace: str, pod: str, container: str = "tensorflow", sig: int = signal.SIGKILL
    ) -> None:
        """Send ``sig`` to a container's processes from outside, as ``kill -9`` by an operator or an
        external agent would: the container ends with 128 + the signal (137) and reason ``Error``,
        and the restart policy then applies as usual."""
        record = self._record(namespace, pod)
        match = next((c for c in record.containers if c.name == container), None) if record else None
        if record is None or match is None or not match.running:
            raise ApiError(404, "NotFound", f'container "{container}" of pod "{pod}" is not running')
        assert self._runner is not None and match.process is not None
        self._runner.signal_group(match.process, sig)

    def _mark_node_lost(self, record: PodRecord) -> None:
        """What the node lifecycle controller does to a lost node's pods (docs/sandbox.md)."""
        now = self._now()
        message = f"Node {self.node_name} which was running pod {record.name} is unresponsive"

        def mark(pod: dict[str, Any]) -> None:
            self._check_uid(pod, record)
            status = pod.setdefault("status", {})
            for condition in status.get("conditions") or []:
                if condition.get("type") == "Ready" and condition.get("status") != "False":
                    condition["status"] = "False"
                    condition["lastTransitionTime"] = now
            status["reason"] = "NodeLost"
            status["message"] = message

        try:
            record.pod = self._store.mutate(
                PODS, record.name, mark, namespace=record.namespace, subresource="status"
            )
        except (ApiError, StalePod):
            return
        self._pod_event(record, "Warning", "NodeNotReady", "Node is not ready", component=NODE_CONTROLLER)
        self._pod_event(
            record,
            "Normal",
            "NodeControllerEviction",
            f"Marking for deletion Pod {record.name} from Node {self.node_name}",
            component=NODE_CONTROLLER,
        )
        with contextlib.suppress(ApiError):
            self._store.delete(PODS, record.name, namespace=record.namespace)

    def _containers_gone(self, record: PodRecord) -> None:
        now = self._now()
        for container in record.containers:
            container.cancel_timer()
            if "terminated" in container.state:
                continue
            if container.ever_started or "running" in container.state:
                container.state = {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "ContainerStatusUnknown",
                        "message": _UNKNOWN_STATUS_MESSAGE,
                        "startedAt": None,
                        "finishedAt": now,
                    }
                }

    def _finish_lost_pod(self, record: PodRecord) -> None:
        """A returning node finds a deleted pod's containers gone: report them, confirm the delete."""
        self._containers_gone(record)
        record.terminating = True
        record.phase = pod_status.FAILED
        self._flush_one(record)
        with contextlib.suppress(ApiError):
            self._store.delete(PODS, record.name, namespace=record.namespace, grace_period_seconds=0)

    def _fail_after_restart(self, record: PodRecord) -> None:
        """A pod of an earlier sandbox: its processes died with it, so it comes back Failed/NodeLost."""
        stored = record.pod.get("status") or {}
        known = [*(stored.get("initContainerStatuses") or []), *(stored.get("containerStatuses") or [])]
        for container in record.containers:
            previous = next((s for s in known if s.get("name") == container.name), None)
            if previous is not None:
                container.state = previous.get("state") or container.state
                container.last_state = previous.get("lastState") or {}
                container.restart_count = int(previous.get("restartCount", 0))
                container.ever_started = True
        record.started_at = stored.get("startTime")
        record.sandbox_ready = True
        self._containers_gone(record)
        record.reason = "NodeLost"
        record.message = f"Node {self.node_name} which was running pod {record.name} is unresponsive"
        record.phase = pod_status.FAILED
        self._flush_one(record)
