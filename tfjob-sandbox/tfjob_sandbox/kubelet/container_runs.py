"""Running containers: image pulls, processes or scripts, exits, restarts with CrashLoopBackOff."""

from __future__ import annotations

import contextlib
import signal
import time
import uuid
from pathlib import Path
from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.kubelet import container_env, pod_status
from tfjob_sandbox.kubelet.image_pulls import PullFailure
from tfjob_sandbox.kubelet.node_state import LOG_DIRECTORY
from tfjob_sandbox.kubelet.pod_records import ContainerRecord, PodRecord, go_duration
from tfjob_sandbox.kubelet.pod_termination import PodTermination
from tfjob_sandbox.kubelet.scripted_pods import ScriptedProcess

_TERMINATION_MESSAGE_LIMIT = 4096
_FALLBACK_LOG_LINES = 80
_FALLBACK_LOG_BYTES = 2048
_PULL_FAILED = "ErrImagePull"
_PULL_BACKOFF = "ImagePullBackOff"
_START_ERROR = "StartError"
_CONFIG_ERROR = "CreateContainerConfigError"


class ContainerRuns(PodTermination):
    """A pod's containers from start to exit, and their restarts."""

    def _start_pod(self, record: PodRecord) -> None:
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

    def _start_container(self, record: PodRecord, container: ContainerRecord) -> None:
        if record.terminating or record.frozen or record.gone or self._stopped:
            return
        if not self._pull(record, container):
            return
        if record.scripted:
            self._play(record, container)
            return
        try:
            env = container_env.container_environment(container.spec, record.pod, home=str(record.directory))
            if self._hostnames is not None:
                env = self._local_peer_addresses(record, env)
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
        log_file = record.directory / LOG_DIRECTORY / container.name / f"{run}.log"
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

    def _local_peer_addresses(self, record: PodRecord, env: dict[str, str]) -> dict[str, str]:
        """Loopback mode: pod names under a subdomain used in the namespace become local ports,
        and the pod's own name's port is freed for it to listen on (host/hostname_ports.py)."""
        assert self._hostnames is not None
        subdomains = {
            str((other.pod.get("spec") or {}).get("subdomain"))
            for other in self._pods.values()
            if other.namespace == record.namespace and (other.pod.get("spec") or {}).get("subdomain")
        }
        env = self._hostnames.rewrite(
            env, namespace=record.namespace, subdomains=subdomains, referrer=record.uid
        )
        spec = record.pod.get("spec") or {}
        if spec.get("hostname") and spec.get("subdomain"):
            self._hostnames.claim_own(record.namespace, spec["hostname"], spec["subdomain"], record.uid)
        return env

    def _play(self, record: PodRecord, container: ContainerRecord) -> None:
        """Start a scripted container: a timer instead of a process (see ``scripted_pods``)."""
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

    def _start_failed(self, record: PodRecord, container: ContainerRecord, detail: str) -> None:
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

    def _pull(self, record: PodRecord, container: ContainerRecord) -> bool:
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

    def _schedule_pull_retry(
        self, record: PodRecord, container: ContainerRecord, failure: PullFailure
    ) -> None:
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

    def _container_exited(self, record: PodRecord, container: ContainerRecord, exit_code: int) -> None:
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

    def _after_exit(self, record: PodRecord, container: ContainerRecord, exit_code: int) -> None:
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

    def _next_init_or_app(self, record: PodRecord, finished: ContainerRecord) -> None:
        inits = record.init_containers
        index = inits.index(finished)
        if index + 1 < len(inits):
            self._start_container(record, inits[index + 1])
        else:
            for container in record.app_containers:
                self._start_container(record, container)
        self._update_phase(record)

    def _restart_later(self, record: PodRecord, container: ContainerRecord) -> None:
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

    def _restart_now(self, record: PodRecord, container: ContainerRecord) -> None:
        container.timer = None
        if record.terminating or record.gone or record.frozen or record.terminal:
            return
        container.restart_count += 1
        self._start_container(record, container)
        self._update_phase(record)

    def _update_phase(self, record: PodRecord, *, force: str | None = None) -> None:
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
    def _fresh_termination_message_file(record: PodRecord, container: ContainerRecord) -> None:
        """An empty termination message file for this run, as the kubelet mounts a new file at every
        container start (a restarted container must not report its previous run's message)."""
        path = Path(container_env.termination_message_file(str(record.directory), container.spec))
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")

    def _termination_message(self, record: PodRecord, container: ContainerRecord, exit_code: int) -> str:
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
            log_file = record.directory / LOG_DIRECTORY / container.name / f"{container.restart_count}.log"
            with contextlib.suppress(OSError):
                lines = log_file.read_bytes().splitlines(keepends=True)[-_FALLBACK_LOG_LINES:]
                return b"".join(lines)[-_FALLBACK_LOG_BYTES:].decode(errors="replace")
        return ""
