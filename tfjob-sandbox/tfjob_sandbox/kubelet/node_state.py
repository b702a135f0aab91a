"""The state every part of the kubelet shares, and the helpers they all use."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.host.hostname_ports import HostnamePorts
from tfjob_sandbox.host.loopback_ports import PortReservations
from tfjob_sandbox.kubelet.pod_records import PodRecord, StalePod
from tfjob_sandbox.kubelet.processes import ProcessRunner
from tfjob_sandbox.store.event_recorder import record_event
from tfjob_sandbox.store.store import Store, format_time

log = logging.getLogger(__name__)

SCHEDULER = "default-scheduler"
KUBELET = "kubelet"
NODE_CONTROLLER = "node-controller"

#: Where container logs live inside the pod directory.  A dot name, because the pod directory is a
#: container's default working directory and so on ``sys.path`` of ``python -c``: a log directory
#: named after the ``tensorflow`` container made ``import tensorflow`` find it as a namespace package.
LOG_DIRECTORY = ".logs"


class KubeletState:
    """The node's records, settings and event loop (set by ``Kubelet.__init__``)."""

    _store: Store
    _ports: PortReservations | None
    _hostnames: HostnamePorts | None
    _workdir: Path
    node_name: str
    backoff_initial: float
    backoff_cap: float
    pod_start_delay: float
    _clock: Callable[[], datetime]
    _pods: dict[str, PodRecord]
    _by_name: dict[tuple[str, str], str]
    _unschedulable: bool
    scripted_exit_times: dict[str, float]
    _node_lost: bool
    _unpullable: dict[str, list[Any]]
    _present_images: set[str]
    _waiting_for_node: dict[str, dict[str, Any]]
    _dirty: set[str]
    _flush_scheduled: bool
    _runner: ProcessRunner | None
    _loop: asyncio.AbstractEventLoop | None
    _listening: bool
    _stopped: bool

    def _record(self, namespace: str, name: str) -> PodRecord | None:
        uid = self._by_name.get((namespace, name))
        return self._pods.get(uid) if uid else None

    def _is_bound(self, record: PodRecord) -> bool:
        return (record.pod.get("spec") or {}).get("nodeName") == self.node_name

    @staticmethod
    def _check_uid(pod: dict[str, Any], record: PodRecord) -> None:
        if pod["metadata"].get("uid") != record.uid:
            raise StalePod(record.name)

    def _pod_directory(self, pod: dict[str, Any]) -> Path:
        meta = pod["metadata"]
        return (
            self._workdir
            / "pods"
            / f"{meta.get('namespace', 'default')}_{meta['name']}_{meta.get('uid', '')}"
        )

    def _pod_event(
        self, record: PodRecord, event_type: str, reason: str, message: str, *, component: str = KUBELET
    ) -> None:
        involved = {"kind": "Pod", "apiVersion": "v1", "metadata": record.pod["metadata"]}
        host = self.node_name if component == KUBELET else None
        try:
            record_event(
                self._store,
                involved=involved,
                reason=reason,
                message=message,
                type=event_type,
                component=component,
                host=host,
            )
        except ApiError as error:
            log.debug("event %s for pod %s dropped: %s", reason, record.name, error.message)

    def _now(self) -> str:
        return format_time(self._clock())
