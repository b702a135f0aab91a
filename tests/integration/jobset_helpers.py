"""Reading and creating JobSets directly through the Kubernetes client, for tests of
``backend="jobset"`` (the job is "external" to the sensor; its JobSet is checked after a task)."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from tfjob_sandbox.testing import sync_api_client

from tfjob_provider._jobset import names


def get_jobset(sandbox: Any, name: str, namespace: str = "default") -> dict[str, Any] | None:
    api = sync_api_client(sandbox)
    try:
        found: dict[str, Any] = k8s.CustomObjectsApi(api).get_namespaced_custom_object(
            names.GROUP, names.VERSION, namespace, names.PLURAL, name
        )
        return found
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    finally:
        api.close()


def create_jobset(sandbox: Any, manifest: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    api = sync_api_client(sandbox)
    try:
        created: dict[str, Any] = k8s.CustomObjectsApi(api).create_namespaced_custom_object(
            names.GROUP, names.VERSION, namespace, names.PLURAL, manifest
        )
        return created
    finally:
        api.close()
