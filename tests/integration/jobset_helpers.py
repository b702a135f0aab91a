"""The JobSet CRD applied to the sandbox, and a stand-in for the JobSet controller's status writes,
for tests of ``backend="jobset"`` that run without a JobSet controller."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from tfjob_sandbox.testing import sync_api_client

from tfjob_provider._jobset import names

CRD = Path(__file__).parents[1] / "unit" / "jobset_crd" / "jobset.x-k8s.io_jobsets-v0.6.0.yaml"


def apply_jobset_crd(sandbox: Any) -> None:
    """Serve ``jobset.x-k8s.io/v1alpha2`` JobSets (upstream's v0.6.0 CRD); once per sandbox."""
    api = sync_api_client(sandbox)
    try:
        k8s.ApiextensionsV1Api(api).create_custom_resource_definition(yaml.safe_load(CRD.read_text()))
    except ApiException as error:
        if error.status != 409:
            raise
    finally:
        api.close()
    deadline = time.monotonic() + 10
    while not jobset_served(sandbox):
        assert time.monotonic() < deadline, "the sandbox does not serve the JobSet CRD"
        time.sleep(0.1)


def jobset_served(sandbox: Any) -> bool:
    api = sync_api_client(sandbox)
    try:
        resources = k8s.CustomObjectsApi(api).get_api_resources(names.GROUP, names.VERSION)
        return any(item.name == names.PLURAL for item in resources.resources)
    except ApiException:
        return False
    finally:
        api.close()


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


def write_condition(sandbox: Any, name: str, condition: str, namespace: str = "default") -> None:
    """Write what the JobSet controller writes when the JobSet ends: a ``Completed`` or ``Failed``
    condition (status subresource)."""
    api = sync_api_client(sandbox)
    try:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {
            "status": {
                "conditions": [
                    {
                        "type": condition,
                        "status": "True",
                        "reason": "AllJobsCompleted" if condition == "Completed" else "FailedJobs",
                        "message": "jobset completed" if condition == "Completed" else "jobset failed",
                        "lastTransitionTime": stamp,
                    }
                ],
                "restarts": 0,
            }
        }
        k8s.CustomObjectsApi(api).patch_namespaced_custom_object_status(
            names.GROUP, names.VERSION, namespace, names.PLURAL, name, body
        )
    finally:
        api.close()


def end_when_created(
    sandbox: Any, name: str, condition: str, stop: threading.Event, namespace: str = "default"
) -> threading.Thread:
    """A thread that writes ``condition`` on JobSet ``name`` a moment after it appears."""

    def run() -> None:
        while not stop.is_set():
            if get_jobset(sandbox, name, namespace) is not None:
                time.sleep(1.0)  # the task is waiting on it by now
                write_condition(sandbox, name, condition, namespace)
                return
            stop.wait(0.1)

    thread = threading.Thread(target=run, name=f"end-{name}", daemon=True)
    thread.start()
    return thread


def list_jobset_names(sandbox: Any, dag_id: str, namespace: str = "default") -> list[str]:
    """Names of the JobSets a task of ``dag_id`` submitted (by the provider's identity annotation)."""
    api = sync_api_client(sandbox)
    try:
        listed = k8s.CustomObjectsApi(api).list_namespaced_custom_object(
            names.GROUP, names.VERSION, namespace, names.PLURAL
        )
    finally:
        api.close()
    return [
        item["metadata"]["name"]
        for item in listed.get("items", [])
        if (item["metadata"].get("annotations") or {}).get("tfjob-provider.airflow.apache.org/dag-id")
        == dag_id
        and not item["metadata"].get("deletionTimestamp")
    ]
