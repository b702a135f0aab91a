"""The scheduler of the one node: bind pending pods, or report them unschedulable."""

from __future__ import annotations

import contextlib
from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import PODS
from tfjob_sandbox.kubelet.container_runs import ContainerRuns
from tfjob_sandbox.kubelet.node_state import SCHEDULER
from tfjob_sandbox.kubelet.pod_records import PodRecord, StalePod


class Scheduling(ContainerRuns):
    """Binding pods to the node, delayed starts, unschedulable reports."""

    def _schedule(self, record: PodRecord) -> None:
        if self._unschedulable or self._node_lost:
            self._report_unschedulable(record)
            return
        self._waiting_for_node.pop(record.uid, None)
        now = self._now()
        node = self.node_name

        def bind(pod: dict[str, Any]) -> None:
            self._check_uid(pod, record)
            pod["spec"]["nodeName"] = node
            status = pod.setdefault("status", {})
            conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conditions.append(
                {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            )
            status["conditions"] = conditions

        try:
            record.pod = self._store.mutate(PODS, record.name, bind, namespace=record.namespace)
        except (ApiError, StalePod):
            return
        self._pod_event(
            record,
            "Normal",
            "Scheduled",
            f"Successfully assigned {record.namespace}/{record.name} to {node}",
            component=SCHEDULER,
        )
        delay = record.script.start_after if record.script is not None else self.pod_start_delay
        if delay > 0 and self._loop is not None:
            # Admitted: startTime and containers Waiting/ContainerCreating while the "image pulls".
            record.started_at = self._now()
            self._mark_dirty(record)
            self._loop.call_later(delay, self._start_pod_if_still_wanted, record)
        else:
            self._start_pod(record)

    def _start_pod_if_still_wanted(self, record: PodRecord) -> None:
        """The delayed start: skipped for a pod deleted, lost or replaced while it waited."""
        if self._stopped or record.terminating or record.gone or record.frozen:
            return
        if self._pods.get(record.uid) is not record:
            return
        self._start_pod(record)

    def _report_unschedulable(self, record: PodRecord) -> None:
        if record.uid in self._waiting_for_node:
            return
        self._waiting_for_node[record.uid] = record.pod
        if self._node_lost:
            detail = "1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }"
        else:
            detail = "1 node(s) were unschedulable"
        message = (
            f"0/1 nodes are available: {detail}. preemption: 0/1 nodes are available: "
            "1 Preemption is not helpful for scheduling."
        )
        now = self._now()

        def mark(pod: dict[str, Any]) -> None:
            self._check_uid(pod, record)
            status = pod.setdefault("status", {})
            conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": now,
                    "reason": "Unschedulable",
                    "message": message,
                }
            )
            status["conditions"] = conditions

        with contextlib.suppress(ApiError, StalePod):
            record.pod = self._store.mutate(
                PODS, record.name, mark, namespace=record.namespace, subresource="status"
            )
        self._pod_event(record, "Warning", "FailedScheduling", message, component=SCHEDULER)

    def _retry_unscheduled(self) -> None:
        for uid in list(self._waiting_for_node):
            record = self._pods.get(uid)
            self._waiting_for_node.pop(uid, None)
            if record is not None and not record.terminating:
                self._schedule(record)
