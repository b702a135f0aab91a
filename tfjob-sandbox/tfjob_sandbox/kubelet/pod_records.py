"""The kubelet's private records of pods and containers, tracked across restarts."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfjob_sandbox.kubelet import pod_status
from tfjob_sandbox.kubelet.processes import ChildProcess
from tfjob_sandbox.kubelet.scripted_pods import (
    PodScript,
    ScriptedProcess,
)


class StalePod(Exception):
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
class ContainerRecord:
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
class PodRecord:
    """The kubelet's private record of one pod (by uid; a recreated pod is a new record)."""

    pod: dict[str, Any]
    directory: Path
    containers: list[ContainerRecord]
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
    def init_containers(self) -> list[ContainerRecord]:
        return [c for c in self.containers if c.init]

    @property
    def app_containers(self) -> list[ContainerRecord]:
        return [c for c in self.containers if not c.init]

    @property
    def terminal(self) -> bool:
        return self.phase in pod_status.TERMINAL_PHASES

    def describe(self) -> str:
        return f"{self.name}_{self.namespace}({self.uid})"
