"""Deletion semantics: finalizers, ownerReference cascades, graceful pod deletion, namespace termination.

The provider deletes TFJobs (and expects their pods to go), strips its own finalizers and watches
pods disappear, so the sandbox must follow kube-apiserver and the garbage collector here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from tfjob_sandbox.testing import pod_manifest, tfjob_manifest, wait_for

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "tfjobs"


def _gone(read: Any, *args: Any) -> bool:
    try:
        read(*args)
    except ApiException as error:
        return error.status == 404
    return False


def _owned_service(name: str, owner: dict[str, Any], **extra: Any) -> dict[str, Any]:
    reference = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "metadata": {"name": name, "ownerReferences": [reference], **extra},
        "spec": {"ports": [{"port": 80}]},
    }


@pytest.fixture
def suspended_job(custom_objects: client.CustomObjectsApi, namespace: str) -> dict[str, Any]:
    """A suspended TFJob: the operator creates no pods for it, so tests control its dependents."""
    manifest = tfjob_manifest("owner", runPolicy={"suspend": True})
    return dict(custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, manifest))


def test_finalizers_hold_an_object_until_removed(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_service(
        namespace,
        {"metadata": {"name": "held", "finalizers": ["example.com/keep"]}, "spec": {"ports": [{"port": 1}]}},
    )
    marked = core_v1.delete_namespaced_service("held", namespace)
    assert marked.metadata.deletion_timestamp is not None
    assert core_v1.read_namespaced_service("held", namespace).metadata.finalizers == ["example.com/keep"]
    with pytest.raises(ApiException) as error:
        core_v1.patch_namespaced_service(
            "held", namespace, {"metadata": {"finalizers": ["example.com/keep", "x/y"]}}
        )
    assert error.value.status == 422  # no new finalizers once deletion started
    core_v1.patch_namespaced_service("held", namespace, {"metadata": {"finalizers": None}})
    assert _gone(core_v1.read_namespaced_service, "held", namespace)


def test_background_deletion_removes_dependents_after_the_owner(
    core_v1: client.CoreV1Api,
    custom_objects: client.CustomObjectsApi,
    namespace: str,
    suspended_job: dict[str, Any],
) -> None:
    core_v1.create_namespaced_service(namespace, _owned_service("dep-1", suspended_job))
    core_v1.create_namespaced_service(namespace, _owned_service("dep-2", suspended_job))
    custom_objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "owner")
    assert _gone(custom_objects.get_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, "owner")
    wait_for(lambda: not core_v1.list_namespaced_service(namespace).items, what="dependents collected")


def test_orphan_deletion_keeps_dependents_without_owner_references(
    core_v1: client.CoreV1Api,
    custom_objects: client.CustomObjectsApi,
    namespace: str,
    suspended_job: dict[str, Any],
) -> None:
    core_v1.create_namespaced_service(namespace, _owned_service("keep-me", suspended_job))
    custom_objects.delete_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "owner", body=client.V1DeleteOptions(propagation_policy="Orphan")
    )
    survivor = core_v1.read_namespaced_service("keep-me", namespace)
    assert survivor.metadata.owner_references is None


def test_foreground_deletion_waits_for_dependents(
    core_v1: client.CoreV1Api,
    custom_objects: client.CustomObjectsApi,
    namespace: str,
    suspended_job: dict[str, Any],
) -> None:
    core_v1.create_namespaced_service(
        namespace, _owned_service("blocker", suspended_job, finalizers=["example.com/slow"])
    )
    custom_objects.delete_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "owner", propagation_policy="Foreground"
    )
    owner = custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "owner")
    assert owner["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert owner["metadata"]["deletionTimestamp"]
    assert core_v1.read_namespaced_service("blocker", namespace).metadata.deletion_timestamp is not None
    core_v1.patch_namespaced_service("blocker", namespace, {"metadata": {"finalizers": None}})
    assert _gone(core_v1.read_namespaced_service, "blocker", namespace)
    assert _gone(custom_objects.get_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, "owner")


def test_running_pod_is_deleted_gracefully_through_the_kubelet(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_pod(namespace, pod_manifest("graceful", command=["sleep", "60"]))
    wait_for(
        lambda: core_v1.read_namespaced_pod("graceful", namespace).status.phase == "Running", what="Running"
    )
    response = core_v1.delete_namespaced_pod("graceful", namespace, _preload_content=False)
    assert response.status == 202  # accepted: the kubelet still has to stop the containers
    marked = json.loads(response.data)
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    assert marked["metadata"]["deletionTimestamp"]
    wait_for(
        lambda: _gone(core_v1.read_namespaced_pod, "graceful", namespace), what="pod removed after SIGTERM"
    )


def test_pod_that_never_ran_is_removed_at_once(sandbox: Any, api_client: Any) -> None:
    core_v1 = client.CoreV1Api(api_client)
    sandbox.set_unschedulable(True)
    core_v1.create_namespaced_pod("default", pod_manifest("never-ran", command=["sleep", "60"]))
    deleted = core_v1.delete_namespaced_pod("never-ran", "default", _preload_content=False)
    assert deleted.status == 200
    assert _gone(core_v1.read_namespaced_pod, "never-ran", "default")


def test_precondition_mismatch_is_409(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_service(
        namespace, {"metadata": {"name": "pre"}, "spec": {"ports": [{"port": 1}]}}
    )
    with pytest.raises(ApiException) as error:
        core_v1.delete_namespaced_service(
            "pre",
            namespace,
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-the-uid")),
        )
    assert error.value.status == 409
    assert json.loads(error.value.body)["message"].startswith("Precondition failed: UID in precondition")


def test_deleting_a_namespace_terminates_it_and_its_contents(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "inside", "finalizers": ["example.com/hold"]},
            "spec": {"ports": [{"port": 1}]},
        },
    )
    core_v1.create_namespaced_pod(namespace, pod_manifest("inside-pod", command=["sleep", "60"]))
    wait_for(
        lambda: core_v1.read_namespaced_pod("inside-pod", namespace).status.phase == "Running", what="Running"
    )
    core_v1.delete_namespace(namespace)
    assert core_v1.read_namespace(namespace).status.phase == "Terminating"
    with pytest.raises(ApiException) as error:
        core_v1.create_namespaced_service(
            namespace, {"metadata": {"name": "late"}, "spec": {"ports": [{"port": 1}]}}
        )
    assert error.value.status == 403
    assert "because it is being terminated" in json.loads(error.value.body)["message"]
    wait_for(lambda: _gone(core_v1.read_namespaced_pod, "inside-pod", namespace), what="pod removed")
    assert core_v1.read_namespace(namespace).status.phase == "Terminating"  # the finalizer still holds it
    core_v1.patch_namespaced_service("inside", namespace, {"metadata": {"finalizers": None}})
    wait_for(lambda: _gone(core_v1.read_namespace, namespace), what="namespace removed")
