"""Read the sandbox cluster the way ``kubectl get`` would, to check what the provider did there."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from tfjob_sandbox.testing import sync_api_client

from tfjob_provider.constants import LABEL_DAG_ID, LABEL_JOB_NAME


def tfjobs_of_dag(sandbox: Any, dag_id: str, namespace: str = "default") -> list[dict[str, Any]]:
    """Every TFJob carrying the provider's dag-id label for ``dag_id`` (deleting ones included)."""
    api = sync_api_client(sandbox)
    try:
        listing = client.CustomObjectsApi(api).list_namespaced_custom_object(
            "kubeflow.org", "v1", namespace, "tfjobs", label_selector=f"{LABEL_DAG_ID}={dag_id}"
        )
    finally:
        api.close()
    items: list[dict[str, Any]] = listing["items"]
    return items


def pods_of_job(sandbox: Any, job_name: str, namespace: str = "default") -> list[Any]:
    """The pods the training operator created for ``job_name`` (V1Pod objects)."""
    api = sync_api_client(sandbox)
    try:
        pods = client.CoreV1Api(api).list_namespaced_pod(
            namespace, label_selector=f"{LABEL_JOB_NAME}={job_name}"
        )
    finally:
        api.close()
    return list(pods.items)


def running_pods_of_dag(sandbox: Any, dag_id: str) -> list[Any] | None:
    """The Running pods of the dag's only TFJob, or None while it has none (for ``wait_for``)."""
    jobs = tfjobs_of_dag(sandbox, dag_id)
    if len(jobs) != 1:
        return None
    pods = [pod for pod in pods_of_job(sandbox, jobs[0]["metadata"]["name"]) if pod.status.phase == "Running"]
    return pods or None
