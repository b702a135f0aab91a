"""The TFJob CRD the sandbox installs at start: schema pruning, defaults, validation and fieldValidation.

The CRD is the project's own (``tfjob_sandbox/admission/crds/tfjobs.yaml``), stored when the sandbox
starts as on a cluster with the training operator installed.  With it, a misspelt field is
rejected under ``fieldValidation=Strict`` (kube-apiserver answers 400 BadRequest "strict decoding
error"), reported in a ``Warning`` header under ``Warn`` (the server default) and silently pruned
under ``Ignore``; ``tfjob_crd=False`` starts a sandbox whose TFJobs are schemaless.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from tfjob_sandbox import Sandbox
from tfjob_sandbox.admission.tfjob_crd import tfjob_crd
from tfjob_sandbox.testing import running_sandbox, sync_api_client, tfjob_manifest

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "tfjobs"
MISSPELT_PATH = "spec.tfReplicaSpecs.Worker.template.spec.containers[0].imagePullPolicyy"


@pytest.fixture(scope="module")
def crd_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, Any]]:
    with running_sandbox(workdir=tmp_path_factory.mktemp("pods")) as sb:
        api = sync_api_client(sb)
        yield sb, api
        api.close()


def _misspelt(name: str) -> dict[str, Any]:
    manifest = tfjob_manifest(name)
    container = manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["imagePullPolicyy"] = "Always"
    return manifest


def _create_raw(api: Any, manifest: dict[str, Any], **query: str) -> Any:
    return client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, manifest, _preload_content=False, **query
    )


def test_crd_is_installed_at_start_established_and_discoverable(crd_sandbox: tuple[Sandbox, Any]) -> None:
    _, api = crd_sandbox
    extensions = client.ApiextensionsV1Api(api)
    listed = extensions.list_custom_resource_definition(_preload_content=False)
    (stored,) = [
        c for c in json.loads(listed.data)["items"] if c["metadata"]["name"] == "tfjobs.kubeflow.org"
    ]
    assert stored["spec"] == tfjob_crd()["spec"]
    crd = extensions.read_custom_resource_definition("tfjobs.kubeflow.org")
    conditions = {c.type: c.status for c in crd.status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    resources = client.CustomObjectsApi(api).get_api_resources(GROUP, VERSION).resources
    names = {resource.name: resource for resource in resources}
    assert names["tfjobs"].kind == "TFJob" and names["tfjobs"].namespaced is True
    assert "tfjobs/status" in names


def test_misspelt_field_is_rejected_under_strict(crd_sandbox: tuple[Sandbox, Any]) -> None:
    _, api = crd_sandbox
    with pytest.raises(ApiException) as error:
        _create_raw(api, _misspelt("strict"), field_validation="Strict")
    body = json.loads(error.value.body)
    assert (error.value.status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == f'strict decoding error: unknown field "{MISSPELT_PATH}"'


def test_misspelt_field_is_warned_under_warn_and_by_default(crd_sandbox: tuple[Sandbox, Any]) -> None:
    _, api = crd_sandbox
    for name, query in (("warned", {"field_validation": "Warn"}), ("defaulted", {})):
        response = _create_raw(api, _misspelt(name), **query)
        assert response.status == 201
        assert response.headers["Warning"] == f'299 - "unknown field \\"{MISSPELT_PATH}\\""'
        created = json.loads(response.data)
        container = created["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
        assert "imagePullPolicyy" not in container  # pruned like kube-apiserver does


def test_misspelt_field_is_pruned_silently_under_ignore(crd_sandbox: tuple[Sandbox, Any]) -> None:
    _, api = crd_sandbox
    response = _create_raw(api, _misspelt("ignored"), field_validation="Ignore")
    assert response.status == 201
    assert "Warning" not in response.headers
    assert "imagePullPolicyy" not in response.data.decode()


def test_schema_types_and_required_fields_give_422_causes(crd_sandbox: tuple[Sandbox, Any]) -> None:
    _, api = crd_sandbox
    manifest = tfjob_manifest("typed")
    manifest["spec"]["runPolicy"] = {"backoffLimit": "three", "suspend": "no"}
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].pop("name")
    with pytest.raises(ApiException) as error:
        _create_raw(api, manifest)
    body = json.loads(error.value.body)
    assert (error.value.status, body["reason"]) == (422, "Invalid")
    causes = {cause["field"]: cause for cause in body["details"]["causes"]}
    assert causes["spec.runPolicy.backoffLimit"]["reason"] == "FieldValueTypeInvalid"
    assert causes["spec.runPolicy.backoffLimit"]["message"] == (
        'Invalid value: "string": spec.runPolicy.backoffLimit in body must be of type integer: "string"'
    )
    assert (
        causes["spec.tfReplicaSpecs.Worker.template.spec.containers[0].name"]["reason"]
        == "FieldValueRequired"
    )
    assert body["message"].startswith('TFJob.kubeflow.org "typed" is invalid: [')


def test_crd_defaults_are_applied(crd_sandbox: tuple[Sandbox, Any]) -> None:
    _, api = crd_sandbox
    manifest = tfjob_manifest("defaults", runPolicy={"cleanPodPolicy": "None"})
    container = manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"containerPort": 2222, "name": "tfjob-port"}]
    created = json.loads(_create_raw(api, manifest).data)
    assert created["spec"]["runPolicy"]["suspend"] is False
    port = created["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"][0]
    assert port["protocol"] == "TCP"


def test_int_or_string_and_preserved_template_metadata(crd_sandbox: tuple[Sandbox, Any]) -> None:
    _, api = crd_sandbox
    manifest = tfjob_manifest("quantities")
    template = manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    template["metadata"] = {"labels": {"team": "ml"}, "annotations": {"a": "b"}}
    template["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 2, "memory": "1Gi"}}
    created = json.loads(_create_raw(api, manifest, field_validation="Strict").data)
    kept = created["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    assert kept["metadata"] == {"labels": {"team": "ml"}, "annotations": {"a": "b"}}
    assert kept["spec"]["containers"][0]["resources"]["limits"] == {"cpu": 2, "memory": "1Gi"}
    bad = tfjob_manifest("bad-quantity")
    bad["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "two"}
    }
    with pytest.raises(ApiException) as error:
        _create_raw(api, bad)
    assert error.value.status == 422
    assert "should match" in json.loads(error.value.body)["message"]


def test_the_operator_webhook_still_runs_after_schema_validation(crd_sandbox: tuple[Sandbox, Any]) -> None:
    _, api = crd_sandbox
    manifest = tfjob_manifest("no-tf-container")
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    with pytest.raises(ApiException) as error:
        _create_raw(api, manifest)
    assert error.value.status == 422


def test_status_updates_are_validated_and_pruned_too(crd_sandbox: tuple[Sandbox, Any]) -> None:
    sandbox, api = crd_sandbox
    sandbox.stop_operator()
    try:
        tfjobs = client.CustomObjectsApi(api)
        job = tfjobs.create_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, tfjob_manifest("stat")
        )
        job["status"] = {"conditions": [{"type": "Created", "status": "True", "bogus": 1}], "startTime": "x"}
        response = tfjobs.replace_namespaced_custom_object_status(
            GROUP, VERSION, "default", PLURAL, "stat", job, _preload_content=False
        )
        stored = json.loads(response.data)["status"]
        assert stored["conditions"] == [{"type": "Created", "status": "True"}]
        assert "unknown field" in response.headers["Warning"]
    finally:
        sandbox.start_operator()


def test_enums_replica_keys_and_bounds_of_the_project_crd(crd_sandbox: tuple[Sandbox, Any]) -> None:
    _, api = crd_sandbox
    manifest = tfjob_manifest("enums", runPolicy={"cleanPodPolicy": "Sometimes", "backoffLimit": -1})
    manifest["spec"]["successPolicy"] = "AnyWorker"
    worker = manifest["spec"]["tfReplicaSpecs"]["Worker"]
    worker["restartPolicy"], worker["replicas"] = "Maybe", -2
    with pytest.raises(ApiException) as error:
        _create_raw(api, manifest)
    causes = {cause["field"]: cause for cause in json.loads(error.value.body)["details"]["causes"]}
    assert causes["spec.tfReplicaSpecs.Worker.restartPolicy"]["message"] == (
        'Unsupported value: "Maybe": supported values: "Always", "OnFailure", "Never", "ExitCode"'
    )
    assert causes["spec.runPolicy.cleanPodPolicy"]["reason"] == "FieldValueNotSupported"
    assert causes["spec.successPolicy"]["message"] == (
        'Unsupported value: "AnyWorker": supported values: "", "AllWorkers"'
    )
    assert "greater than or equal to 0" in causes["spec.tfReplicaSpecs.Worker.replicas"]["message"]
    assert "greater than or equal to 0" in causes["spec.runPolicy.backoffLimit"]["message"]
    unknown_type = tfjob_manifest("parameter-server")
    replica_specs = unknown_type["spec"]["tfReplicaSpecs"]
    replica_specs["ParameterServer"] = replica_specs["Worker"]
    with pytest.raises(ApiException) as strict:
        _create_raw(api, unknown_type, field_validation="Strict")
    assert json.loads(strict.value.body)["message"] == (
        'strict decoding error: unknown field "spec.tfReplicaSpecs.ParameterServer"'
    )


def test_without_the_crd_tfjobs_are_schemaless(tmp_path: Any) -> None:
    with running_sandbox(workdir=tmp_path / "pods", tfjob_crd=False) as sb:
        api = sync_api_client(sb)
        extensions = client.ApiextensionsV1Api(api)
        crds = extensions.list_custom_resource_definition().items
        assert [c.metadata.name for c in crds] == ["jobsets.jobset.x-k8s.io"]
        created = json.loads(_create_raw(api, _misspelt("loose"), field_validation="Strict").data)
        container = created["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
        assert container["imagePullPolicyy"] == "Always"
        made = extensions.create_custom_resource_definition(tfjob_crd())
        assert made.metadata.name == "tfjobs.kubeflow.org"
        with pytest.raises(ApiException) as error:
            _create_raw(api, _misspelt("checked"), field_validation="Strict")
        assert error.value.status == 400
        api.close()


def test_deleting_the_crd_deletes_its_objects_but_tfjobs_stay_served(tmp_path: Any) -> None:
    with running_sandbox(workdir=tmp_path / "pods") as sb:
        api = sync_api_client(sb)
        extensions = client.ApiextensionsV1Api(api)
        tfjobs = client.CustomObjectsApi(api)
        tfjobs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, tfjob_manifest("doomed"))
        extensions.delete_custom_resource_definition("tfjobs.kubeflow.org")
        listed = tfjobs.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
        assert listed["items"] == []
        loose = tfjob_manifest("schemaless")
        loose["spec"]["anything"] = {"goes": True}
        created = tfjobs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, loose)
        assert created["spec"]["anything"] == {"goes": True}
        api.close()


def test_other_crds_are_served_generically(tmp_path: Any) -> None:
    widget_crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": {"type": "integer", "minimum": 1},
                                        "colour": {"type": "string", "enum": ["red", "blue"]},
                                    },
                                },
                            },
                        }
                    },
                }
            ],
        },
    }
    with running_sandbox(workdir=tmp_path / "pods") as sb:
        api = sync_api_client(sb)
        client.ApiextensionsV1Api(api).create_custom_resource_definition(widget_crd)
        widgets = client.CustomObjectsApi(api)
        made = widgets.create_namespaced_custom_object(
            "example.com",
            "v1",
            "default",
            "widgets",
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "w"},
                "spec": {"size": 2, "colour": "red"},
            },
        )
        assert made["spec"] == {"size": 2, "colour": "red"}
        with pytest.raises(ApiException) as error:
            widgets.create_namespaced_custom_object(
                "example.com",
                "v1",
                "default",
                "widgets",
                {
                    "apiVersion": "example.com/v1",
                    "kind": "Widget",
                    "metadata": {"name": "x"},
                    "spec": {"size": 0, "colour": "green"},
                },
            )
        causes = {c["field"]: c["message"] for c in json.loads(error.value.body)["details"]["causes"]}
        assert causes["spec.colour"] == 'Unsupported value: "green": supported values: "red", "blue"'
        assert "greater than or equal to 1" in causes["spec.size"]
        api.close()
