"""Shared scaffolding for the kubelet and TFJob workload tests: a store-backed node on a real loop.

The tests drive the real store, kubelet and operator emulation on one asyncio loop (the same
wiring the ``Sandbox`` class uses), with tiny ``python -c`` containers and short back-offs so
that every scenario runs in about a second.  Nothing here fakes Kubernetes behaviour: it only
builds manifests and waits for conditions to become true.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfjob_sandbox.admission.tfjob_webhook import register_tfjob_admission
from tfjob_sandbox.api.resource_types import EVENTS, PODS, TFJOBS
from tfjob_sandbox.host.loopback_ports import PortReservations
from tfjob_sandbox.kubelet.kubelet import Kubelet
from tfjob_sandbox.store.store import Store
from tfjob_sandbox.training_operator.controller import TrainingOperator

PY = sys.executable


def py(code: str) -> list[str]:
    """A container command running ``code`` with this interpreter (fast start, no site)."""
    return [PY, "-I", "-S", "-c", code]


def sleep_then_exit(seconds: float, code: int = 0) -> list[str]:
    return py(f"import time, sys; time.sleep({seconds}); sys.exit({code})")


@dataclass
class Node:
    """One store with a kubelet and (optionally) the operator running on the current loop."""

    store: Store
    kubelet: Kubelet
    operator: TrainingOperator
    ports: PortReservations | None = None

    def pod(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return self.store.get(PODS, name, namespace=namespace)

    def pod_or_none(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        return self.store.peek(PODS, name, namespace=namespace)

    def job(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return self.store.get(TFJOBS, name, namespace=namespace)

    def events(self, *, name: str | None = None, reason: str | None = None) -> list[dict[str, Any]]:
        items = self.store.list(EVENTS)["items"]
        return [
            e
            for e in items
            if (name is None or e["involvedObject"].get("name") == name)
            and (reason is None or e["reason"] == reason)
        ]

    def conditions(self, job: str) -> list[tuple[str, str]]:
        status = self.job(job).get("status") or {}
        return [(c["type"], c["status"]) for c in status.get("conditions") or []]


@contextlib.asynccontextmanager
async def running_node(
    workdir: Path,
    *,
    operator: bool = True,
    backoff_initial: float = 0.1,
    backoff_cap: float = 0.4,
    pod_start_delay: float = 0.0,
    **kwargs: Any,
) -> AsyncIterator[Node]:
    store = Store()
    register_tfjob_admission(store)
    # As the sandbox runtime wires them: the operator reserves loopback ports, the kubelet releases.
    ports = PortReservations() if kwargs.get("loopback_tf_config") else None
    kubelet = Kubelet(
        store,
        workdir=workdir,
        backoff_initial=backoff_initial,
        backoff_cap=backoff_cap,
        pod_start_delay=pod_start_delay,
        ports=ports,
    )
    training_operator = TrainingOperator(store, ports=ports, **kwargs)
    kubelet.start()
    if operator:
        training_operator.start()
    try:
        yield Node(store, kubelet, training_operator, ports)
    finally:
        await training_operator.stop()
        await kubelet.stop()
        if ports is not None:
            ports.close()


async def wait_for(predicate: Callable[[], Any], *, timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll ``predicate`` on the loop until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        await asyncio.sleep(interval)


def run(coro: Any, *, timeout: float = 60.0) -> Any:
    """Run one test scenario on a fresh loop with an overall time limit."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def pod_manifest(
    name: str,
    command: list[str],
    *,
    restart_policy: str = "Never",
    grace: int | None = None,
    image: str = "python:3.11",
    **container: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": restart_policy,
        "containers": [{"name": "tensorflow", "image": image, "command": command, **container}],
    }
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def replica(command: list[str], *, replicas: int = 1, restart_policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "template": {
            "spec": {"containers": [{"name": "tensorflow", "image": "tf:2.15", "command": command}]}
        },
    }
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    return spec


def tfjob(name: str, replica_specs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": replica_specs, **spec},
    }


def phase(pod: dict[str, Any] | None) -> str | None:
    return None if pod is None else (pod.get("status") or {}).get("phase")


def container_status(pod: dict[str, Any], name: str = "tensorflow") -> dict[str, Any]:
    """The named container's status, or an empty one while the kubelet has not reported it."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status["name"] == name:
            return dict(status)
    return {"name": name, "state": {}, "lastState": {}, "restartCount": 0}  # not reported yet


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is still in process group ``pgid``.

    ``os.killpg(pgid, 0)`` also succeeds for zombies that init has not reaped yet (reparented
    grandchildren), and those are dead; so ``/proc`` decides where it exists.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False
