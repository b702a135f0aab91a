"""Test support for anything that needs a live sandbox: start one, build official clients for it, wait.

The sandbox tests and the Airflow integration tests share these helpers so every suite talks to
the sandbox the same way a user would: through its kubeconfig, with the official ``kubernetes``
and ``kubernetes_asyncio`` clients.  Nothing here patches a client; pytest fixtures wrap these
functions in each suite's ``conftest.py``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from tfjob_provider.sandbox.cluster import Sandbox

T = TypeVar("T")

#: Names the reference TFJob CRD file when it is not in a ``shared/crds`` folder beside the checkout.
REAL_TFJOB_CRD_ENV = "TFJOB_PROVIDER_CRD"
_CRD_RELATIVE = Path("shared") / "crds" / "kubeflow.org_tfjobs.yaml"


def find_real_tfjob_crd(checkout: Path | None = None) -> Path:
    """The training operator's real TFJob CRD, which the tests apply (it is never copied into the project).

    ``$TFJOB_PROVIDER_CRD`` if set; else ``shared/crds/kubeflow.org_tfjobs.yaml`` in the folder that
    holds the checkout or in any folder above it; else the same beside the local repository this
    checkout was cloned from (``git clone /work/main /tmp/x/p`` finds ``/work/shared``); else the
    path beside the checkout, where it is expected (a test that needs it then fails naming that path).
    """
    configured = os.environ.get(REAL_TFJOB_CRD_ENV)
    if configured:
        return Path(configured)
    checkout = checkout or Path(__file__).resolve().parents[2]
    origin = _local_clone_origin(checkout)
    for start in (checkout, origin):
        for folder in start.parents if start is not None else ():
            if (folder / _CRD_RELATIVE).is_file():
                return folder / _CRD_RELATIVE
    return checkout.parent / _CRD_RELATIVE


def _local_clone_origin(checkout: Path) -> Path | None:
    """The local repository ``checkout`` was cloned from, when its ``origin`` is a path on this machine."""
    try:
        found = subprocess.run(
            ["git", "-C", str(checkout), "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    url = found.stdout.strip().removeprefix("file://")
    if not url.startswith("/"):
        return None  # a remote URL: nothing beside it on this machine
    origin = Path(url).resolve()
    return origin if origin.is_dir() else None


REAL_TFJOB_CRD = find_real_tfjob_crd()


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
