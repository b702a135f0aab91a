"""Submit and inspect TFJobs directly through the provider's hook, for tests that drive a trigger or
a sensor without an operator (the job is "external" to them)."""

from __future__ import annotations

from typing import Any

from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.kube.errors import NotFoundError
from tfjob_provider.manifest import build_tfjob


def submit_tfjob(name: str, *, command: list[str], namespace: str = "default", **typed: Any) -> str:
    """Create a TFJob (one Chief and one Worker unless ``typed`` says otherwise); return its UID."""
    manifest = build_tfjob(
        name=name, image="python:3.11", command=command, namespace=namespace, **{"chief": 1, **typed}
    )
    hook = TFJobHook()
    try:
        created = hook.client.create_tfjob(manifest, namespace=namespace)
    finally:
        hook.client.close()
    return str(created["metadata"]["uid"])


def tfjob_exists(name: str, namespace: str = "default") -> bool:
    hook = TFJobHook()
    try:
        hook.client.get_tfjob(name, namespace=namespace)
    except NotFoundError:
        return False
    finally:
        hook.client.close()
    return True


def delete_tfjob(name: str, namespace: str = "default") -> None:
    hook = TFJobHook()
    try:
        hook.client.delete_tfjob(name, namespace=namespace)
    finally:
        hook.client.close()
