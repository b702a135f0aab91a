"""Create/read/update/patch/delete through the official client, with kube-apiserver's metadata rules.

Covers server-filled metadata (uid, resourceVersion, generation, creationTimestamp,
generateName), 404/409/422/400 Status errors, optimistic concurrency, the TFJob status
subresource, dryRun and namespace existence — the behaviour the provider's client code relies on.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from tfjob_sandbox.testing import pod_manifest, tfjob_manifest

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "tfjobs"


def _status(error: ApiException) -> dict[str, Any]:
    body = json.loads(error.body)
    assert body["kind"] == "Status" and body["code"] == error.status
    return body


def test_create_fills_server_metadata(custom_objects: client.CustomObjectsApi, namespace: str) -> None:
    job = custom_objects.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, tfjob_manifest("meta")
    )
    meta = job["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert int(meta["resourceVersion"]) > 0
    assert meta["generation"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert meta["namespace"] == namespace
    fetched = custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "meta")
    assert {key: fetched["metadata"][key] for key in ("uid", "creationTimestamp", "generation")} == {
        key: meta[key] for key in ("uid", "creationTimestamp", "generation")
    }


def test_generate_name_appends_five_characters(core_v1: client.CoreV1Api, namespace: str) -> None:
    manifest = pod_manifest("")
    manifest["metadata"] = {"generateName": "gen-"}
    first = core_v1.create_namespaced_pod(namespace, manifest)
    second = core_v1.create_namespaced_pod(namespace, manifest)
    assert re.fullmatch(r"gen-[bcdfghjklmnpqrstvwxz2456789]{5}", first.metadata.name)
    assert first.metadata.name != second.metadata.name


def test_resource_versions_rise_monotonically_across_types(
    core_v1: client.CoreV1Api, custom_objects: client.CustomObjectsApi, namespace: str
) -> None:
    pod = core_v1.create_namespaced_pod(namespace, pod_manifest("rv-pod", command=["sleep", "30"]))
    job = custom_objects.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, tfjob_manifest("rv")
    )
    assert int(job["metadata"]["resourceVersion"]) > int(pod.metadata.resource_version)


def test_get_missing_object_is_404_with_kubernetes_wording(
    core_v1: client.CoreV1Api, custom_objects: client.CustomObjectsApi, namespace: str
) -> None:
    with pytest.raises(ApiException) as pod_error:
        core_v1.read_namespaced_pod("absent", namespace)
    assert pod_error.value.status == 404
    assert _status(pod_error.value)["message"] == 'pods "absent" not found'
    with pytest.raises(ApiException) as job_error:
        custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "absent")
    body = _status(job_error.value)
    assert body["reason"] == "NotFound"
    assert body["message"] == 'tfjobs.kubeflow.org "absent" not found'
    assert body["details"] == {"name": "absent", "group": "kubeflow.org", "kind": "tfjobs"}


def test_create_twice_is_409_already_exists(custom_objects: client.CustomObjectsApi, namespace: str) -> None:
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, tfjob_manifest("twice"))
    with pytest.raises(ApiException) as error:
        custom_objects.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, tfjob_manifest("twice")
        )
    body = _status(error.value)
    assert (error.value.status, body["reason"]) == (409, "AlreadyExists")
    assert body["message"] == 'tfjobs.kubeflow.org "twice" already exists'


def test_stale_resource_version_is_409_conflict(core_v1: client.CoreV1Api, namespace: str) -> None:
    # A service: no emulated controller writes to it, so only this test changes its resourceVersion.
    service = core_v1.create_namespaced_service(
        namespace, {"metadata": {"name": "occ"}, "spec": {"ports": [{"port": 80}]}}
    )
    service.metadata.labels = {"first": "writer"}
    updated = core_v1.replace_namespaced_service("occ", namespace, service)
    assert updated.metadata.labels == {"first": "writer"}
    service.metadata.labels = {"second": "writer"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as error:
        core_v1.replace_namespaced_service("occ", namespace, service)
    body = _status(error.value)
    assert (error.value.status, body["reason"]) == (409, "Conflict")
    assert body["message"] == (
        'Operation cannot be fulfilled on services "occ": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_update_of_custom_resource_requires_resource_version(
    custom_objects: client.CustomObjectsApi, namespace: str
) -> None:
    job = custom_objects.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, tfjob_manifest("norv")
    )
    del job["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as error:
        custom_objects.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "norv", job)
    assert error.value.status == 422
    assert "metadata.resourceVersion" in _status(error.value)["message"]


def test_spec_change_bumps_generation_but_metadata_change_does_not(
    custom_objects: client.CustomObjectsApi, namespace: str
) -> None:
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, tfjob_manifest("gen"))
    labelled = custom_objects.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "gen", {"metadata": {"labels": {"x": "y"}}}
    )
    assert labelled["metadata"]["generation"] == 1
    suspended = custom_objects.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "gen", {"spec": {"runPolicy": {"suspend": True}}}
    )
    assert suspended["metadata"]["generation"] == 2
    assert int(suspended["metadata"]["resourceVersion"]) > int(labelled["metadata"]["resourceVersion"])


def test_status_subresource_separates_spec_and_status(sandbox: Any, api_client: Any) -> None:
    api = client.CustomObjectsApi(api_client)
    sandbox.stop_operator()  # nothing else writes the status during this test
    job = api.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, {**tfjob_manifest("sub"), "status": {"ignored": True}}
    )
    assert "status" not in job  # status sent on create is dropped, as for CRDs with a status subresource
    job["status"] = {"conditions": [{"type": "Created", "status": "True"}]}
    job["spec"]["runPolicy"] = {"suspend": True}
    with_status = api.replace_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "sub", job)
    assert with_status["status"]["conditions"][0]["type"] == "Created"
    assert "runPolicy" not in with_status["spec"]  # spec changes are ignored on /status
    patched = api.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "sub",
        {"status": {"conditions": []}, "metadata": {"labels": {"a": "b"}}},
    )
    assert patched["status"]["conditions"][0]["type"] == "Created"  # status ignored on the main resource
    assert patched["metadata"]["labels"] == {"a": "b"}


def test_merge_and_json_patch(custom_objects: client.CustomObjectsApi, namespace: str) -> None:
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, tfjob_manifest("patch"))
    merged = custom_objects.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "patch", {"metadata": {"annotations": {"a": "1", "b": "2"}}}
    )
    assert merged["metadata"]["annotations"] == {"a": "1", "b": "2"}
    patched = custom_objects.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "patch",
        [
            {"op": "remove", "path": "/metadata/annotations/a"},
            {"op": "replace", "path": "/spec/tfReplicaSpecs/Worker/replicas", "value": 3},
        ],
        _content_type="application/json-patch+json",  # CustomObjectsApi defaults to merge patch
    )
    assert patched["metadata"]["annotations"] == {"b": "2"}
    assert patched["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3
    with pytest.raises(ApiException) as error:
        custom_objects.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            "patch",
            [{"op": "test", "path": "/spec/x", "value": 1}],
            _content_type="application/json-patch+json",
        )
    assert error.value.status == 422


def test_dry_run_validates_without_storing(core_v1: client.CoreV1Api, namespace: str) -> None:
    before = core_v1.list_namespaced_pod(namespace).metadata.resource_version
    created = core_v1.create_namespaced_pod(namespace, pod_manifest("dry"), dry_run="All")
    assert created.metadata.name == "dry" and created.metadata.uid
    with pytest.raises(ApiException) as error:
        core_v1.read_namespaced_pod("dry", namespace)
    assert error.value.status == 404
    assert core_v1.list_namespaced_pod(namespace).metadata.resource_version == before


def test_invalid_pod_is_422_with_causes(core_v1: client.CoreV1Api, namespace: str) -> None:
    manifest = pod_manifest("Bad_Name")
    manifest["spec"]["containers"][0].pop("image")
    with pytest.raises(ApiException) as error:
        core_v1.create_namespaced_pod(namespace, manifest)
    body = _status(error.value)
    assert (error.value.status, body["reason"]) == (422, "Invalid")
    fields = {cause["field"] for cause in body["details"]["causes"]}
    assert fields == {"metadata.name", "spec.containers[0].image"}
    assert body["message"].startswith('Pod "Bad_Name" is invalid: [')


def test_objects_need_an_existing_namespace(core_v1: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as error:
        core_v1.create_namespaced_pod("no-such-namespace", pod_manifest("orphan"))
    assert error.value.status == 404
    assert _status(error.value)["message"] == 'namespaces "no-such-namespace" not found'


def test_namespace_mismatch_between_url_and_body_is_400(core_v1: client.CoreV1Api, namespace: str) -> None:
    manifest = pod_manifest("mismatch")
    manifest["metadata"]["namespace"] = "default"
    with pytest.raises(ApiException) as error:
        core_v1.create_namespaced_pod(namespace, manifest)
    assert error.value.status == 400
    assert "does not match the namespace sent on the request" in _status(error.value)["message"]


def test_services_get_defaults_and_cluster_ips(core_v1: client.CoreV1Api, namespace: str) -> None:
    normal = core_v1.create_namespaced_service(
        namespace, {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}}}
    )
    headless = core_v1.create_namespaced_service(
        namespace, {"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "selector": {"a": "b"}}}
    )
    assert re.fullmatch(r"10\.96\.\d+\.\d+", normal.spec.cluster_ip)
    assert normal.spec.ports[0].protocol == "TCP" and normal.spec.ports[0].target_port == 80
    assert headless.spec.cluster_ip == "None"


def test_delete_returns_status_for_custom_resources_and_object_for_pods(
    core_v1: client.CoreV1Api, custom_objects: client.CustomObjectsApi, namespace: str
) -> None:
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, tfjob_manifest("gone"))
    result = custom_objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "gone")
    assert result["kind"] == "Status" and result["status"] == "Success"
    assert result["details"]["name"] == "gone"
    pod = core_v1.create_namespaced_pod(namespace, pod_manifest("unbound"))
    deleted = core_v1.delete_namespaced_pod(pod.metadata.name, namespace, grace_period_seconds=0)
    assert deleted.metadata.name == "unbound"
    with pytest.raises(ApiException) as error:
        core_v1.read_namespaced_pod("unbound", namespace)
    assert error.value.status == 404


def test_unserved_resources_are_404(module_api_client: Any) -> None:
    with pytest.raises(ApiException) as error:
        client.CoreV1Api(module_api_client).list_namespaced_config_map("default")
    assert error.value.status == 404
    assert _status(error.value)["message"] == "the server could not find the requested resource"


def test_delete_collection_by_label(core_v1: client.CoreV1Api, namespace: str) -> None:
    for name, team in (("c-1", "a"), ("c-2", "a"), ("c-3", "b")):
        core_v1.create_namespaced_service(
            namespace,
            {"metadata": {"name": name, "labels": {"team": team}}, "spec": {"ports": [{"port": 1}]}},
        )
    core_v1.delete_collection_namespaced_service(namespace, label_selector="team=a")
    assert [s.metadata.name for s in core_v1.list_namespaced_service(namespace).items] == ["c-3"]


def test_dry_run_delete_and_patch_change_nothing(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_service(
        namespace, {"metadata": {"name": "keep"}, "spec": {"ports": [{"port": 1}]}}
    )
    before = core_v1.read_namespaced_service("keep", namespace)
    patched = core_v1.patch_namespaced_service(
        "keep", namespace, {"metadata": {"labels": {"x": "y"}}}, dry_run="All"
    )
    assert patched.metadata.labels == {"x": "y"}
    core_v1.delete_namespaced_service("keep", namespace, dry_run="All")
    after = core_v1.read_namespaced_service("keep", namespace)
    assert after.metadata.resource_version == before.metadata.resource_version
    assert after.metadata.labels is None
