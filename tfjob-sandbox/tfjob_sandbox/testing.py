"""Helpers for tests that need a live sandbox: ``running_sandbox``, official clients for it, ``wait_for``."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from tfjob_sandbox.launch.in_thread import Sandbox

T = TypeVar("T")


@contextlib.contextmanager
def running_sandbox(**options: Any) -> Iterator[Sandbox]:
    """A started :class:`Sandbox` (options as for its constructor), stopped afterwards."""
    with Sandbox(**options) as sandbox:
        yield sandbox


def sync_api_client(sandbox: Sandbox) -> Any:
    """A ``kubernetes.client.ApiClient`` built from the sandbox's kubeconfig (close it when done)."""
    from kubernetes import config  # type: ignore[import-untyped]

    return config.new_client_from_config(config_file=str(sandbox.kubeconfig_path))


async def async_api_client(sandbox: Sandbox) -> Any:
    """A ``kubernetes_asyncio.client.ApiClient`` built from the sandbox's kubeconfig (close it when done)."""
    from kubernetes_asyncio import config

    return await config.new_client_from_config(config_file=str(sandbox.kubeconfig_path))


def wait_for(
    probe: Callable[[], T | None], *, timeout: float = 15.0, interval: float = 0.02, what: str = "condition"
) -> T:
    """Poll ``probe`` until it returns something truthy and return that; AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.1f}s waiting for {what}")
        time.sleep(interval)


def unique_name(prefix: str = "t") -> str:
    """A DNS-1035 name unlikely to collide between tests sharing one sandbox."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def pod_manifest(
    name: str, *, command: list[str] | None = None, labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """A minimal single-container pod that runs ``command`` (default: exit 0 at once)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": command or ["true"]}],
            **spec,
        },
    }


def tfjob_manifest(
    name: str, *, command: list[str] | None = None, workers: int = 1, **spec: Any
) -> dict[str, Any]:
    """A minimal TFJob: ``workers`` Worker replicas running ``command`` in the ``tensorflow`` container."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": workers,
                    "restartPolicy": "Never",
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "tensorflow",
                                    "image": "tensorflow/tensorflow:2.15.0",
                                    "command": command or ["true"],
                                }
                            ]
                        }
                    },
                }
            },
            **spec,
        },
    }


def job_manifest(
    name: str, *, command: list[str] | None = None, restart_policy: str = "Never", **spec: Any
) -> dict[str, Any]:
    """A minimal batch/v1 Job running ``command`` in its ``main`` container (``spec`` keys added as given)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": restart_policy,
                    "containers": [{"name": "main", "image": "busybox", "command": command or ["true"]}],
                }
            },
            **spec,
        },
    }
