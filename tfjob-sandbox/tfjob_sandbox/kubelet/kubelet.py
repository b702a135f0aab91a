"""The sandbox's node: a scheduler plus a kubelet that runs pod containers as local processes.

Without Docker or a cluster, something still has to turn pods into running programs whose exits
the training operator and the provider can observe through the API.  This module is that node:
one virtual node (``sandbox-node``) that binds pending pods, "pulls" images (instantly, unless a
fault says otherwise), runs each container's ``command``/``args`` as a child process (see
:mod:`container_env` for the exact rules and :mod:`processes` for process handling), and
reports container states, restarts with CrashLoopBackOff back-off, pod phases and conditions,
and the events the scheduler and kubelet emit.  Graceful deletion sends SIGTERM to the process
group, SIGKILL after the grace period, then confirms with a zero-grace delete.

Faults (eviction, node loss, unpullable images, unschedulable node, OOM kills) are methods here
because they are what a node does to its pods; their exact semantics are in ``docs/sandbox.md``.
Everything runs on the sandbox's event loop; store writes are coalesced per loop iteration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import PODS, ResourceType
from tfjob_sandbox.host.loopback_ports import PortReservations
from tfjob_sandbox.kubelet import container_env, pod_status
from tfjob_sandbox.kubelet.image_pulls import PullFailure, check_cause
from tfjob_sandbox.kubelet.processes import ChildProcess, ProcessRunner
from tfjob_sandbox.kubelet.scripted_pods import (
    PodScript,
    ScriptedProcess,
    ScriptError,
    parse_script,
    script_of,
)
from tfjob_sandbox.store.event_recorder import record_event
from tfjob_sandbox.store.store import Store, format_time, utcnow

log = logging.getLogger(__name__)

SCHEDULER = "default-scheduler"
KUBELET = "kubelet"
NODE_CONTROLLER = "node-controller"
DEFAULT_EVICTION_MESSAGE = "The node was low on resource: memory. "
_TERMINATION_MESSAGE_LIMIT = 4096
_FALLBACK_LOG_LINES = 80
_FALLBACK_LOG_BYTES = 2048
_PULL_FAILED = "ErrImagePull"
_PULL_BACKOFF = "ImagePullBackOff"
_START_ERROR = "StartError"
_CONFIG_ERROR = "CreateContainerConfigError"
_UNKNOWN_STATUS_MESSAGE = "The container could not be located when the pod was terminated"
#: Where container logs live inside the pod directory.  A dot name, because the pod directory is a
#: container's default working directory and so on ``sys.path`` of ``python -c``: a log directory
#: named after the ``tensorflow`` container made ``import tensorflow`` find it as a namespace package.
_LOGS = ".logs"


class _StalePod(Exception):
    """The pod in the store is not the one this runtime belongs to (same name, new uid)."""


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration`` text for whole-millisecond values: ``500ms``, ``10s``, ``1m20s``."""
    millis = round(seconds * 1000)
    if millis < 1000:
        return f"{millis}ms"
    minutes, rest = divmod(millis, 60_000)
    secs = f"{rest / 1000:g}s"
    return f"{minutes}m{secs}" if minutes else secs


@dataclass(eq=False)
class _Container:
    """One container of a pod as the kubelet tracks it across restarts."""

    spec: dict[str, Any]
    init: bool
    state: dict[str, Any] = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: dict[str, Any] = field(default_factory=dict)
    restart_count: int = 0
    process: ChildProcess | ScriptedProcess | None = None
    container_id: str = ""
    ever_started: bool = False
    backoff: float = 0.0
    last_start: float = 0.0
    timer: asyncio.TimerHandle | None = None
    kill_reason: str | None = None
    image_failures: int = 0

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def image(self) -> str:
        return str(self.spec.get("image", ""))

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running

    @property
    def exited_ok(self) -> bool:
        terminated = self.state.get("terminated") or {}
        return bool(terminated) and int(terminated.get("exitCode", 1)) == 0

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


@dataclass(eq=False)
class _Pod:
    """The kubelet's private record of one pod (by uid; a recreated pod is a new record)."""

    pod: dict[str, Any]
    directory: Path
    containers: list[_Container]
    phase: str = pod_status.PENDING
    started_at: str | None = None
    sandbox_ready: bool = False
    terminating: bool = False
    kill_timer: asyncio.TimerHandle | None = None
    reason: str | None = None
    message: str | None = None
    extra_conditions: list[dict[str, Any]] = field(default_factory=list)
    frozen: bool = False
    gone: bool = False
    #: A scripted pod's script (docs/sandbox.md, "Scripted pods"); None for process pods.
    script: PodScript | None = None
    script_error: str | None = None
    pull_failures_left: int | None = None

    @property
    def scripted(self) -> bool:
        return self.script is not None or self.script_error is not None

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"].get("namespace", "default"))

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.pod["metadata"].get("uid", ""))

    @property
    def restart_policy(self) -> str:
        return str((self.pod.get("spec") or {}).get("restartPolicy") or "Always")

    @property
    def init_containers(self) -> list[_Container]:
        return [c for c in self.containers if c.init]

    @property
    def app_containers(self) -> list[_Container]:
        return [c for c in self.containers if not c.init]

    @property
    def terminal(self) -> bool:
        return self.phase in pod_status.TERMINAL_PHASES

    def describe(self) -> str:
        return f"{self.name}_{self.namespace}({self.uid})"


class Kubelet:
    """The sandbox node (see the module docstring).

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
        self._workdir = Path(workdir)
        self.node_name = node_name
        self.backoff_initial = backoff_initial
        self.backoff_cap = backoff_cap
        self.pod_start_delay = pod_start_delay
        self._clock = clock
        self._pods: dict[str, _Pod] = {}
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

    # -- lifecycle ------------------------------------------------------------------------------

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
                (int(p.stem) for p in (directory / _LOGS / container).glob("*.log") if p.stem.isdigit()),
                reverse=True,
            )
            if not runs:
                return None
            run = runs[1] if previous and len(runs) > 1 else (-1 if previous else runs[0])
        if run < 0:
            return None
        path = directory / _LOGS / container / f"{run}.log"
        return path if path.exists() else None

    # -- faults ---------------------------------------------------------------------------------

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

    # -- store events ---------------------------------------------------------------------------

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

    def _new_record(self, pod: dict[str, Any]) -> _Pod:
        spec = pod.get("spec") or {}
        containers = [_Container(spec=dict(c), init=True) for c in spec.get("initContainers") or []]
        containers += [_Container(spec=dict(c), init=False) for c in spec.get("containers") or []]
        record = _Pod(pod=pod, directory=self._pod_directory(pod), containers=containers)
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

    # -- scheduling -----------------------------------------------------------------------------

    def _schedule(self, record: _Pod) -> None:
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
        except (ApiError, _StalePod):
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

    def _start_pod_if_still_wanted(self, record: _Pod) -> None:
        """The delayed start: skipped for a pod deleted, lost or replaced while it waited."""
        if self._stopped or record.terminating or record.gone or record.frozen:
            return
        if self._pods.get(record.uid) is not record:
            return
        self._start_pod(record)

    def _report_unschedulable(self, record: _Pod) -> None:
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

        with contextlib.suppress(ApiError, _StalePod):
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

    # -- running containers ---------------------------------------------------------------------

    def _start_pod(self, record: _Pod) -> None:
        if not record.scripted:
            record.directory.mkdir(parents=True, exist_ok=True)
        record.started_at = record.started_at or self._now()
        record.sandbox_ready = True
        if record.init_containers:
            self._start_container(record, record.init_containers[0])
        else:
            for container in record.app_containers:
                self._start_container(record, container)
        self._mark_dirty(record)

    def _start_container(self, record: _Pod, container: _Container) -> None:
        if record.terminating or record.frozen or record.gone or self._stopped:
            return
        if not self._pull(record, container):
            return
        if record.scripted:
            self._play(record, container)
            return
        try:
            env = container_env.container_environment(container.spec, record.pod, home=str(record.directory))
            argv = container_env.container_argv(container.spec, env)
        except container_env.ContainerConfigError as error:
            container.state = {"waiting": {"reason": _CONFIG_ERROR, "message": str(error)}}
            self._pod_event(record, "Warning", "Failed", f"Error: {error}")
            self._mark_dirty(record)
            return
        except container_env.NoCommandError as error:
            self._start_failed(record, container, str(error))
            return
        cwd = Path(container_env.working_directory(str(record.directory), container.spec))
        cwd.mkdir(parents=True, exist_ok=True)
        self._fresh_termination_message_file(record, container)
        run = container.restart_count
        log_file = record.directory / _LOGS / container.name / f"{run}.log"
        container.container_id = f"sandbox://{uuid.uuid4().hex}"
        assert self._runner is not None and self._loop is not None
        if self._ports is not None:
            for declared in container.spec.get("ports") or []:
                self._ports.release(int(declared.get("containerPort") or 0))
        try:
            container.process = self._runner.spawn(
                argv,
                env=env,
                cwd=cwd,
                log_path=log_file,
                on_exit=lambda code: self._container_exited(record, container, code),
            )
        except OSError as error:
            self._start_failed(record, container, f"exec: {argv[0]!r}: {error.strerror or error}")
            return
        container.ever_started = True
        container.last_start = self._loop.time()
        container.kill_reason = None
        container.state = {"running": {"startedAt": self._now()}}
        self._pod_event(record, "Normal", "Created", f"Created container: {container.name}")
        self._pod_event(record, "Normal", "Started", f"Started container {container.name}")
        self._mark_dirty(record)

    def _play(self, record: _Pod, container: _Container) -> None:
        """Start a scripted container: a timer instead of a process (:mod:`scripted_pods`)."""
        assert self._loop is not None
        if record.script is None:
            message = record.script_error or "invalid script"
            container.state = {"waiting": {"reason": _CONFIG_ERROR, "message": message}}
            self._pod_event(record, "Warning", "Failed", f"Error: {message}")
            self._mark_dirty(record)
            return
        step = record.script.step(container.restart_count)
        run, reason = (0.0, None) if container.init else (step.run, step.reason)
        code = 0 if container.init else step.exit

        def end() -> None:
            if reason == "Evicted":
                with contextlib.suppress(ApiError):
                    self.evict(record.namespace, record.name)
                return
            container.kill_reason = reason
            process.exit(code)

        def exited(exit_code: int) -> None:
            self.scripted_exit_times[f"{record.namespace}/{record.name}/{container.name}"] = time.time()
            self._container_exited(record, container, exit_code)

        process = ScriptedProcess(self._loop, run, on_end=end, on_exit=exited)
        container.process = process
        container.container_id = f"sandbox://{uuid.uuid4().hex}"
        container.ever_started = True
        container.last_start = self._loop.time()
        container.state = {"running": {"startedAt": self._now()}}
        self._pod_event(record, "Normal", "Created", f"Created container: {container.name}")
        self._pod_event(record, "Normal", "Started", f"Started container {container.name}")
        self._mark_dirty(record)

    def _signal(self, process: ChildProcess | ScriptedProcess, sig: int) -> None:
        """Signal a container: a process's whole group, or a scripted container's timer."""
        if isinstance(process, ScriptedProcess):
            process.signal(sig)
        elif self._runner is not None:
            self._runner.signal_group(process, sig)

    def _start_failed(self, record: _Pod, container: _Container, detail: str) -> None:
        """The process could not be started: terminated with exit 128 and reason StartError, like runc."""
        now = self._now()
        message = (
            "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
            f"runc create failed: unable to start container process: {detail}: unknown"
        )
        container.state = {
            "terminated": {
                "exitCode": 128,
                "reason": _START_ERROR,
                "message": message,
                "startedAt": "1970-01-01T00:00:00Z",
                "finishedAt": now,
                "containerID": container.container_id or f"sandbox://{uuid.uuid4().hex}",
            }
        }
        self._pod_event(record, "Warning", "Failed", f"Error: {message}")
        self._after_exit(record, container, 128)

    def _pull(self, record: _Pod, container: _Container) -> bool:
        image = container.image
        policy = str(container.spec.get("imagePullPolicy") or "IfNotPresent")
        fault = self._unpullable.get(image)
        script = record.script
        if script is not None and script.pull_cause is not None and record.pull_failures_left != 0:
            failure: PullFailure | None = PullFailure(image, script.pull_cause)
            if record.pull_failures_left is not None:
                record.pull_failures_left -= 1
        elif fault is not None:
            failure = PullFailure(image, fault[0])
            if fault[1] is not None:
                fault[1] -= 1
                if fault[1] <= 0:
                    del self._unpullable[image]  # the registry recovers after this pull
        else:
            failure = None
        if failure is not None:
            self._pod_event(record, "Normal", "Pulling", f'Pulling image "{image}"')
            self._pod_event(record, "Warning", "Failed", failure.event_message)
            self._pod_event(record, "Warning", "Failed", f"Error: {_PULL_FAILED}")
            container.state = {"waiting": {"reason": _PULL_FAILED, "message": failure.error}}
            self._mark_dirty(record)
            self._schedule_pull_retry(record, container, failure)
            return False
        if policy != "Always" and (image in self._present_images or policy == "Never"):
            self._pod_event(
                record, "Normal", "Pulled", f'Container image "{image}" already present on machine'
            )
        else:
            self._pod_event(record, "Normal", "Pulling", f'Pulling image "{image}"')
            self._pod_event(
                record,
                "Normal",
                "Pulled",
                f'Successfully pulled image "{image}" in 0s (0s including waiting). Image size: 0 bytes.',
            )
            self._present_images.add(image)
        container.image_failures = 0
        return True

    def _schedule_pull_retry(self, record: _Pod, container: _Container, failure: PullFailure) -> None:
        assert self._loop is not None
        delay = min(self.backoff_initial * (2**container.image_failures), self.backoff_cap)
        container.image_failures += 1

        def back_off() -> None:
            if record.terminating or record.gone or record.frozen:
                return
            container.state = {"waiting": {"reason": _PULL_BACKOFF, "message": failure.back_off_message}}
            self._pod_event(record, "Normal", "BackOff", f'Back-off pulling image "{container.image}"')
            self._pod_event(record, "Warning", "Failed", f"Error: {_PULL_BACKOFF}")
            self._mark_dirty(record)
            container.timer = self._loop.call_later(delay, retry) if self._loop else None

        def retry() -> None:
            container.timer = None
            self._start_container(record, container)

        container.cancel_timer()
        container.timer = self._loop.call_later(min(delay, 0.2), back_off)

    def _container_exited(self, record: _Pod, container: _Container, exit_code: int) -> None:
        container.process = None
        if record.gone or self._stopped:
            return
        now = self._now()
        started = (container.state.get("running") or {}).get("startedAt", now)
        if container.kill_reason == "OOMKilled":
            reason = "OOMKilled"
        elif record.frozen:
            return
        else:
            reason = "Completed" if exit_code == 0 else "Error"
        terminated: dict[str, Any] = {"exitCode": exit_code, "reason": reason}
        message = self._termination_message(record, container, exit_code)
        if message:
            terminated["message"] = message
        terminated.update({"startedAt": started, "finishedAt": now, "containerID": container.container_id})
        container.state = {"terminated": terminated}
        container.kill_reason = None
        self._after_exit(record, container, exit_code)

    def _after_exit(self, record: _Pod, container: _Container, exit_code: int) -> None:
        self._mark_dirty(record)
        if record.terminating or record.reason == "Evicted":
            self._finish_if_stopped(record, force_phase=pod_status.FAILED if record.reason else None)
            return
        policy = record.restart_policy
        restart = policy == "Always" or (policy == "OnFailure" and exit_code != 0)
        if container.init:
            restart = policy != "Never" and exit_code != 0
            if exit_code == 0:
                self._next_init_or_app(record, container)
                return
        if restart:
            self._restart_later(record, container)
            return
        self._update_phase(record)

    def _next_init_or_app(self, record: _Pod, finished: _Container) -> None:
        inits = record.init_containers
        index = inits.index(finished)
        if index + 1 < len(inits):
            self._start_container(record, inits[index + 1])
        else:
            for container in record.app_containers:
                self._start_container(record, container)
        self._update_phase(record)

    def _restart_later(self, record: _Pod, container: _Container) -> None:
        """Restart in place: at once the first time, then with doubling back-off (CrashLoopBackOff)."""
        assert self._loop is not None
        now = self._loop.time()
        if container.backoff == 0.0 or now - container.last_start > 2 * self.backoff_cap:
            container.backoff = self.backoff_initial
            delay = 0.0
        else:
            delay = container.backoff
            container.backoff = min(container.backoff * 2, self.backoff_cap)
        container.last_state = {"terminated": dict(container.state["terminated"])}
        container.cancel_timer()
        if delay > 0:
            container.state = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": (
                        f"back-off {go_duration(delay)} restarting failed container={container.name} "
                        f"pod={record.describe()}"
                    ),
                }
            }
            self._pod_event(
                record,
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {container.name} in pod {record.describe()}",
            )
            self._update_phase(record)
        container.timer = self._loop.call_later(delay, self._restart_now, record, container)

    def _restart_now(self, record: _Pod, container: _Container) -> None:
        container.timer = None
        if record.terminating or record.gone or record.frozen or record.terminal:
            return
        container.restart_count += 1
        self._start_container(record, container)
        self._update_phase(record)

    def _update_phase(self, record: _Pod, *, force: str | None = None) -> None:
        if record.terminal:
            return
        phase = force or pod_status.pod_phase(
            [self._container_status(record, c) for c in record.app_containers],
            restart_policy=record.restart_policy,
            init_statuses=[self._container_status(record, c) for c in record.init_containers],
        )
        record.phase = phase
        if record.terminal:
            for container in record.containers:
                container.cancel_timer()
            self._kill_all(record, signal.SIGKILL, reason=None)
        self._mark_dirty(record)

    @staticmethod
    def _fresh_termination_message_file(record: _Pod, container: _Container) -> None:
        """An empty termination message file for this run, as the kubelet mounts a new file at every
        container start (a restarted container must not report its previous run's message)."""
        path = Path(container_env.termination_message_file(str(record.directory), container.spec))
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")

    def _termination_message(self, record: _Pod, container: _Container, exit_code: int) -> str:
        if record.scripted:
            return ""  # no process, no files
        """The ``message`` of a terminated container, as the kubelet fills it.

        The file's *last* 4096 bytes (the kubelet reads it with ``tail.ReadAtMost``, so a longer
        message loses its beginning); when the file is empty or missing, the policy is
        ``FallbackToLogsOnError`` and the exit code is not 0, the last 80 lines of the log, at most
        2048 bytes.
        """
        path = Path(container_env.termination_message_file(str(record.directory), container.spec))
        with contextlib.suppress(OSError):
            text = path.read_bytes()[-_TERMINATION_MESSAGE_LIMIT:].decode(errors="replace")
            if text:
                return text
        if exit_code != 0 and container.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
            log_file = record.directory / _LOGS / container.name / f"{container.restart_count}.log"
            with contextlib.suppress(OSError):
                lines = log_file.read_bytes().splitlines(keepends=True)[-_FALLBACK_LOG_LINES:]
                return b"".join(lines)[-_FALLBACK_LOG_BYTES:].decode(errors="replace")
        return ""

    # -- deletion -------------------------------------------------------------------------------

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

    def _kill_all(self, record: _Pod, sig: int, reason: str | None) -> None:
        for container in record.containers:
            if container.process is not None and container.process.running:
                if reason:
                    container.kill_reason = reason
                self._signal(container.process, sig)

    def _finish_if_stopped(self, record: _Pod, *, force_phase: str | None = None) -> None:
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

    # -- node loss and restarts -----------------------------------------------------------------

    def _mark_node_lost(self, record: _Pod) -> None:
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
        except (ApiError, _StalePod):
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

    def _containers_gone(self, record: _Pod) -> None:
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

    def _finish_lost_pod(self, record: _Pod) -> None:
        """A returning node finds a deleted pod's containers gone: report them, confirm the delete."""
        self._containers_gone(record)
        record.terminating = True
        record.phase = pod_status.FAILED
        self._flush_one(record)
        with contextlib.suppress(ApiError):
            self._store.delete(PODS, record.name, namespace=record.namespace, grace_period_seconds=0)

    def _fail_after_restart(self, record: _Pod) -> None:
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

    # -- status writing -------------------------------------------------------------------------

    def _mark_dirty(self, record: _Pod) -> None:
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

    def _flush_one(self, record: _Pod) -> None:
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
        except (ApiError, _StalePod):
            return

    def _build_status(self, record: _Pod) -> dict[str, Any]:
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

    def _container_status(self, record: _Pod, container: _Container) -> dict[str, Any]:
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

    # -- helpers --------------------------------------------------------------------------------

    def _record(self, namespace: str, name: str) -> _Pod | None:
        uid = self._by_name.get((namespace, name))
        return self._pods.get(uid) if uid else None

    def _is_bound(self, record: _Pod) -> bool:
        return (record.pod.get("spec") or {}).get("nodeName") == self.node_name

    @staticmethod
    def _check_uid(pod: dict[str, Any], record: _Pod) -> None:
        if pod["metadata"].get("uid") != record.uid:
            raise _StalePod(record.name)

    def _pod_directory(self, pod: dict[str, Any]) -> Path:
        meta = pod["metadata"]
        return (
            self._workdir
            / "pods"
            / f"{meta.get('namespace', 'default')}_{meta['name']}_{meta.get('uid', '')}"
        )

    def _pod_event(
        self, record: _Pod, event_type: str, reason: str, message: str, *, component: str = KUBELET
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
