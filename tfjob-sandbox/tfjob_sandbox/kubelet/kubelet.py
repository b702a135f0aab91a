"""The sandbox's node: a scheduler plus a kubelet that runs pod containers as local processes."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import PODS, ResourceType
from tfjob_sandbox.host.hostname_ports import HostnamePorts
from tfjob_sandbox.host.loopback_ports import PortReservations
from tfjob_sandbox.kubelet import pod_status
from tfjob_sandbox.kubelet.node_faults import NodeFaults
from tfjob_sandbox.kubelet.node_state import LOG_DIRECTORY
from tfjob_sandbox.kubelet.pod_records import ContainerRecord, PodRecord
from tfjob_sandbox.kubelet.processes import ProcessRunner
from tfjob_sandbox.kubelet.scripted_pods import (
    ScriptError,
    parse_script,
    script_of,
)
from tfjob_sandbox.store.store import Store, utcnow


class Kubelet(NodeFaults):
    """The sandbox node: its public methods are here and in its parts (``NodeFaults`` and below).

    :param store: the sandbox's object store.
    :param workdir: where pod directories and container logs live.
    :param node_name: the one node's name (``spec.nodeName`` of every pod it runs).
    :param backoff_initial: first CrashLoopBackOff / image pull back-off, in seconds (kubelet: 10 s).
    :param backoff_cap: back-off ceiling, in seconds (kubelet: 300 s).
    :param pod_start_delay: seconds between binding a pod and starting its containers, during
        which they wait in ``ContainerCreating`` — the image pull and pod sandbox set-up a real
        node spends (0: start at once).  Lets tests see Pending replicas, and keeps a deferred
        task's trigger from firing within seconds of the deferral.
    :param clock: the time written into statuses and events.
    :param ports: loopback ports reserved for pods (loopback TF_CONFIG); a container's declared
        ``containerPort`` values are released just before its process starts, so the process
        can bind them and nothing else could take them before.
    """

    def __init__(
        self,
        store: Store,
        *,
        workdir: Path,
        node_name: str = "sandbox-node",
        backoff_initial: float = 1.0,
        backoff_cap: float = 10.0,
        pod_start_delay: float = 0.0,
        clock: Callable[[], datetime] = utcnow,
        ports: PortReservations | None = None,
    ) -> None:
        self._store = store
        self._ports = ports
        #: In loopback mode, pod DNS names (hostname.subdomain) in env values become local ports.
        self._hostnames = HostnamePorts(ports) if ports is not None else None
        self._workdir = Path(workdir)
        self.node_name = node_name
        self.backoff_initial = backoff_initial
        self.backoff_cap = backoff_cap
        self.pod_start_delay = pod_start_delay
        self._clock = clock
        self._pods: dict[str, PodRecord] = {}
        self._by_name: dict[tuple[str, str], str] = {}
        self._unschedulable = False
        #: When each scripted container last ended (``time.time()``), by "namespace/pod/container":
        #: a test facility, so that a benchmark can time how fast a waiter notices an exit to the
        #: microsecond (statuses carry whole seconds).
        self.scripted_exit_times: dict[str, float] = {}
        self._node_lost = False
        # image -> [cause, pulls left to fail or None for "until lifted"]
        self._unpullable: dict[str, list[Any]] = {}
        self._present_images: set[str] = set()
        self._waiting_for_node: dict[str, dict[str, Any]] = {}
        self._dirty: set[str] = set()
        self._flush_scheduled = False
        self._runner: ProcessRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listening = False
        self._stopped = False

    def start(self) -> None:
        """Register with the store and take over the pods already in it (on the loop thread).

        Pods bound to this node whose processes died with an earlier sandbox come back failed,
        as a lost node's pods do; pods not yet bound are scheduled.
        """
        self._loop = asyncio.get_running_loop()
        self._runner = ProcessRunner()
        self._stopped = False
        if not self._listening:
            # Read-only listener (records keep the stored pod, edits go through store.mutate), so
            # no private copies: two deep copies per write of any kind cost most of the CPU of
            # 40,000 scripted pods.
            self._store.add_listener(self._on_change, copies=False)
            self._listening = True
        for pod in self._store.list(PODS)["items"]:
            self._adopt(pod)

    async def stop(self) -> None:
        """Stop every process group this kubelet started and reap them all (no orphans)."""
        self._stopped = True
        for record in self._pods.values():
            for container in record.containers:
                container.cancel_timer()
            if record.kill_timer is not None:
                record.kill_timer.cancel()
        if self._runner is not None:
            await self._runner.shutdown(grace=2.0)

    @property
    def running_processes(self) -> int:
        return len(self._runner.children) if self._runner is not None else 0

    def process_group_ids(self) -> list[int]:
        """Process group ids of all live container processes (for tests and diagnostics)."""
        return [child.pid for child in self._runner.children] if self._runner is not None else []

    def log_path(self, namespace: str, pod: str, container: str, *, previous: bool = False) -> Path | None:
        """The log file of ``container`` in ``pod`` (its previous run with ``previous``), if it exists."""
        uid = self._by_name.get((namespace, pod))
        record = self._pods.get(uid) if uid else None
        if record is not None:
            directory = record.directory
            match = next((c for c in record.containers if c.name == container), None)
            if match is None:
                return None
            run = match.restart_count - 1 if previous else match.restart_count
        else:
            stored = self._store.peek(PODS, pod, namespace=namespace)
            if stored is None:
                return None
            directory = self._pod_directory(stored)
            runs = sorted(
                (
                    int(p.stem)
                    for p in (directory / LOG_DIRECTORY / container).glob("*.log")
                    if p.stem.isdigit()
                ),
                reverse=True,
            )
            if not runs:
                return None
            run = runs[1] if previous and len(runs) > 1 else (-1 if previous else runs[0])
        if run < 0:
            return None
        path = directory / LOG_DIRECTORY / container / f"{run}.log"
        return path if path.exists() else None

    def _on_change(
        self, event_type: str, rt: ResourceType, new: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt != PODS or self._stopped or self._loop is None:
            return
        uid = str(new["metadata"].get("uid", ""))
        if event_type == "DELETED":
            self._loop.call_soon(self._forget, uid)
            return
        record = self._pods.get(uid)
        if record is None:
            if event_type == "ADDED":
                self._loop.call_soon(
                    self._admit, new["metadata"].get("namespace", ""), new["metadata"]["name"], uid
                )
            return
        record.pod = new
        if new["metadata"].get("deletionTimestamp") and not record.terminating:
            self._loop.call_soon(self._begin_termination, uid)

    def _admit(self, namespace: str, name: str, uid: str) -> None:
        if self._stopped:
            return
        try:
            pod = self._store.get(PODS, name, namespace=namespace)
        except ApiError:
            return
        if pod["metadata"].get("uid") == uid:
            self._adopt(pod)

    def _adopt(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid = str(meta.get("uid", ""))
        if uid in self._pods:
            return
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        node = spec.get("nodeName")
        if node and node != self.node_name:
            return
        record = self._new_record(pod)
        if phase in pod_status.TERMINAL_PHASES:
            record.phase = phase
            return
        if node:
            # Bound to this node by an earlier sandbox whose processes are gone.
            if meta.get("deletionTimestamp"):
                self._finish_lost_pod(record)
            else:
                self._fail_after_restart(record)
            return
        self._schedule(record)

    def _new_record(self, pod: dict[str, Any]) -> PodRecord:
        spec = pod.get("spec") or {}
        containers = [ContainerRecord(spec=dict(c), init=True) for c in spec.get("initContainers") or []]
        containers += [ContainerRecord(spec=dict(c), init=False) for c in spec.get("containers") or []]
        record = PodRecord(pod=pod, directory=self._pod_directory(pod), containers=containers)
        text = script_of(pod)
        if text is not None:
            try:
                record.script = parse_script(text)
                record.pull_failures_left = record.script.pull_failures
            except ScriptError as error:
                record.script_error = str(error)
        self._pods[record.uid] = record
        self._by_name[(record.namespace, record.name)] = record.uid
        return record

    def _forget(self, uid: str) -> None:
        if self._hostnames is not None:
            self._hostnames.forget(uid)
        record = self._pods.pop(uid, None)
        self._waiting_for_node.pop(uid, None)
        if record is None:
            return
        record.gone = True
        if self._by_name.get((record.namespace, record.name)) == uid:
            del self._by_name[(record.namespace, record.name)]
        if record.kill_timer is not None:
            record.kill_timer.cancel()
        # Force-deleted while running: nothing waits for a grace period any more.
        self._kill_all(record, signal.SIGKILL, reason=None)
