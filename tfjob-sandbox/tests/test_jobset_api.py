"""JobSets served by the sandbox: the CRD, the webhook's defaults and denials, what the controller
creates (Jobs, pod templates, the headless Service), printing and garbage collection, through the
official ``kubernetes`` client; and the exact JobSet shape the provider writes is accepted.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jobset_helpers import (
    GROUP,
    PLURAL,
    PREFIX,
    VERSION,
    JobSetClient,
    jobless_sandbox,
    namespace_client,
    replicated_job,
    upstream_jobset,
)
from kubernetes import client
from kubernetes.client.rest import ApiException
from tfjob_sandbox import Sandbox
from tfjob_sandbox.admission.jobset_crd import jobset_crd
from tfjob_sandbox.testing import running_sandbox, sync_api_client, wait_for

UPSTREAM_CRD = (
    Path(__file__).resolve().parents[2] / "tests/unit/jobset_crd/jobset.x-k8s.io_jobsets-v0.6.0.yaml"
)


@pytest.fixture(scope="module")
def api_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    with jobless_sandbox(workdir=tmp_path_factory.mktemp("pods")) as sb:
        yield sb


@pytest.fixture
def js(api_sandbox: Sandbox) -> Iterator[JobSetClient]:
    with namespace_client(api_sandbox) as js_client:
        yield js_client


def status_of(error: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error.body)
    return body


# --- the CRD ----------------------------------------------------------------------------------


def test_crd_is_installed_established_and_discoverable(js: JobSetClient) -> None:
    module_api_client = js.api
    crd = client.ApiextensionsV1Api(module_api_client).read_custom_resource_definition(
        "jobsets.jobset.x-k8s.io"
    )
    assert {c.type: c.status for c in crd.status.conditions} == {
        "NamesAccepted": "True",
        "Established": "True",
    }
    resources = client.CustomObjectsApi(module_api_client).get_api_resources(GROUP, VERSION).resources
    jobsets = next(r for r in resources if r.name == "jobsets")
    assert (jobsets.kind, jobsets.namespaced) == ("JobSet", True)
    assert any(r.name == "jobsets/status" for r in resources)


def _fields(schema: dict[str, Any], path: str = "") -> set[str]:
    """Every declared property path below ``schema`` (array items as ``[]``)."""
    found = set()
    for key, child in (schema.get("properties") or {}).items():
        here = f"{path}.{key}" if path else key
        found.add(here)
        found |= _fields(child, here)
    items = schema.get("items")
    if isinstance(items, dict):
        found |= _fields(items, path + "[]")
    return found


@pytest.mark.skipif(not UPSTREAM_CRD.exists(), reason="the upstream v0.6.0 CRD is the provider's test data")
def test_crd_field_names_exist_in_upstreams_crd() -> None:
    """Every field our CRD declares is declared by JobSet v0.6.0's own CRD (v0.7's restartStrategy aside)."""
    (ours,) = jobset_crd()["spec"]["versions"]
    (theirs,) = yaml.safe_load(UPSTREAM_CRD.read_text(encoding="utf-8"))["spec"]["versions"]
    missing = _fields(ours["schema"]["openAPIV3Schema"]) - _fields(theirs["schema"]["openAPIV3Schema"])
    assert missing == {"spec.failurePolicy.restartStrategy"}
    assert [c["name"] for c in ours["additionalPrinterColumns"]] == [
        c["name"] for c in theirs["additionalPrinterColumns"]
    ]


# --- admission --------------------------------------------------------------------------------


def test_create_applies_the_webhooks_and_the_schemas_defaults(js: JobSetClient) -> None:
    manifest = upstream_jobset(failurePolicy={"rules": [{"action": "FailJobSet"}]})
    del manifest["spec"]["replicatedJobs"][0]["replicas"]
    del manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["restartPolicy"]
    spec = js.create(manifest)["spec"]
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert spec["failurePolicy"] == {
        "restartStrategy": "Recreate",
        "rules": [{"action": "FailJobSet", "name": "failurePolicyRule0"}],
    }
    first = spec["replicatedJobs"][0]
    assert first["replicas"] == 1
    assert first["template"]["spec"]["completionMode"] == "Indexed"
    assert first["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert "managedBy" not in spec


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        pytest.param(
            {"successPolicy": {"operator": "All", "targetReplicatedJobs": ["nope"]}},
            "spec.successPolicy.targetReplicatedJobs",
            "invalid replicatedJob name 'nope' does not appear in .spec.ReplicatedJobs",
            id="success policy has non matching replicated job",
        ),
        pytest.param(
            {
                "failurePolicy": {
                    "rules": [{"name": "r", "action": "FailJobSet", "targetReplicatedJobs": ["nope"]}]
                }
            },
            "spec.failurePolicy.rules[0].targetReplicatedJobs",
            "invalid replicatedJob name 'nope' in failure policy does not appear in .spec.ReplicatedJobs",
            id="jobset failure policy has an invalid replicated job",
        ),
        pytest.param(
            {"network": {"subdomain": "a" * 64}},
            "spec.network.subdomain",
            ".spec.network.subdomain is too long, must be less than 63 characters",
            id="network has invalid dns name",
        ),
    ],
)
def test_webhook_denials_are_422_with_upstreams_messages(
    js: JobSetClient, change: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ApiException) as raised:
        js.create(upstream_jobset(**change))
    status = status_of(raised.value)
    assert (raised.value.status, status["reason"]) == (422, "Invalid")
    assert {"reason": "FieldValueForbidden", "field": field, "message": message} in status["details"][
        "causes"
    ]
    assert f"{field}: {message}" in status["message"]


def test_pod_names_must_fit_63_characters(js: JobSetClient) -> None:
    """A name leaving no room for ``<name>-<rjob>-<job>-<index>-abcde``: refused before any Job exists."""
    manifest = upstream_jobset("a" * 47)
    manifest["spec"]["replicatedJobs"] = [replicated_job("worker", completionMode="Indexed", completions=10)]
    with pytest.raises(ApiException) as raised:
        js.create(manifest)
    assert status_of(raised.value)["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "field": "metadata.name",
            "message": "JobSet name is too long, pod names generated for this JobSet will exceed 63 "
            "characters",
        }
    ]
    assert js.jobs() == {}


def test_schema_rejects_an_unknown_action_and_strict_unknown_fields(js: JobSetClient) -> None:
    with pytest.raises(ApiException) as raised:
        js.create(upstream_jobset(failurePolicy={"rules": [{"name": "r", "action": "Explode"}]}))
    assert raised.value.status == 422
    assert "spec.failurePolicy.rules[0].action: Unsupported value" in status_of(raised.value)["message"]
    manifest = upstream_jobset(sucessPolicy={"operator": "Any"})
    with pytest.raises(ApiException) as strict:
        js.custom.create_namespaced_custom_object(
            GROUP, VERSION, js.namespace, PLURAL, manifest, field_validation="Strict"
        )
    assert strict.value.status == 400
    assert 'unknown field "spec.sucessPolicy"' in status_of(strict.value)["message"]


def test_spec_is_immutable_but_for_suspend_and_a_suspended_pod_template(js: JobSetClient) -> None:
    """TestValidateUpdate and the CRD's ``self == oldSelf`` rules."""
    js.create(upstream_jobset())
    js.patch({"spec": {"suspend": True}})
    js.patch({"metadata": {"labels": {"team": "ml"}}})
    current = js.get()
    current["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {
        "pool": "a"
    }
    js.custom.replace_namespaced_custom_object(GROUP, VERSION, js.namespace, PLURAL, "test-js", current)
    refused = [
        ({"spec": {"successPolicy": {"operator": "Any"}}}, "spec.successPolicy"),
        ({"spec": {"managedBy": "example.com/other"}}, "spec.managedBy"),
        ({"spec": {"network": {"subdomain": "other"}}}, "spec.network"),
    ]
    for patch, field in refused:
        with pytest.raises(ApiException) as raised:
            js.patch(patch)
        assert raised.value.status == 422
        assert [c["field"] for c in status_of(raised.value)["details"]["causes"]] == [field]
    js.patch({"spec": {"suspend": False}})
    current = js.get()
    current["spec"]["replicatedJobs"][1]["replicas"] = 5
    with pytest.raises(ApiException) as raised:
        js.custom.replace_namespaced_custom_object(GROUP, VERSION, js.namespace, PLURAL, "test-js", current)
    assert (
        status_of(raised.value)["details"]["causes"][0]["message"]
        == 'Invalid value: "array": field is immutable'
    )


# --- what the controller creates ---------------------------------------------------------------


def test_jobs_service_labels_annotations_and_owner(js: JobSetClient) -> None:
    created = js.create(upstream_jobset(network={"subdomain": "net", "publishNotReadyAddresses": False}))
    jobs = js.wait_jobs(4)
    assert sorted(jobs) == [
        "test-js-replicated-job-a-0",
        "test-js-replicated-job-b-0",
        "test-js-replicated-job-b-1",
        "test-js-replicated-job-b-2",
    ]
    job = jobs["test-js-replicated-job-b-2"]
    expected = {
        PREFIX + "jobset-name": "test-js",
        PREFIX + "replicatedjob-name": "replicated-job-b",
        PREFIX + "replicatedjob-replicas": "3",
        PREFIX + "global-replicas": "4",
        PREFIX + "job-index": "2",
        PREFIX + "job-global-index": "3",
        PREFIX + "job-key": hashlib.sha1(f"{js.namespace}/test-js-replicated-job-b-2".encode()).hexdigest(),
        PREFIX + "restart-attempt": "0",
    }
    for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
        assert {k: v for k, v in meta["labels"].items() if k.startswith(PREFIX)} == expected
        assert {k: v for k, v in meta["annotations"].items() if k.startswith(PREFIX)} == expected
    assert job["spec"]["template"]["spec"]["subdomain"] == "net"
    assert job["spec"]["suspend"] is False
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "test-js",
            "uid": created["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    service = js.core.read_namespaced_service("net", js.namespace)
    assert (service.spec.cluster_ip, service.spec.selector) == ("None", {PREFIX + "jobset-name": "test-js"})
    assert service.spec.publish_not_ready_addresses is False
    assert service.metadata.owner_references[0].uid == created["metadata"]["uid"]
    status = js.wait_status("replicatedJobsStatus", js.get().get("status", {}).get("replicatedJobsStatus"))
    assert [s["name"] for s in status["replicatedJobsStatus"]] == ["replicated-job-a", "replicated-job-b"]


def test_deleting_the_jobset_collects_jobs_and_service(js: JobSetClient) -> None:
    js.create(upstream_jobset())
    js.wait_jobs(4)
    wait_for(lambda: js.core.list_namespaced_service(js.namespace).items, what="service")
    js.custom.delete_namespaced_custom_object(GROUP, VERSION, js.namespace, PLURAL, "test-js")
    wait_for(lambda: not js.jobs(), what="Jobs collected")
    wait_for(lambda: not js.core.list_namespaced_service(js.namespace).items, what="service collected")


def test_table_printing_has_jobsets_columns(js: JobSetClient) -> None:
    js.create(upstream_jobset())
    js.wait_jobs(4)
    response = js.custom.api_client.call_api(
        f"/apis/{GROUP}/{VERSION}/namespaces/{js.namespace}/{PLURAL}",
        "GET",
        header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    table = json.loads(response.data)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "TerminalState",
        "Restarts",
        "Completed",
        "Suspended",
        "Age",
    ]
    assert table["rows"][0]["cells"][:5] == ["test-js", None, None, None, None]


def test_a_sandbox_without_jobsets_answers_404() -> None:
    with running_sandbox(jobsets=False) as sb:
        api = sync_api_client(sb)
        try:
            with pytest.raises(ApiException) as raised:
                client.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
            assert raised.value.status == 404
        finally:
            api.close()


# --- the provider's shape ----------------------------------------------------------------------

_TF_CONFIG = (
    '{"cluster":{"ps":["mnist-ps-0-0.mnist:2222"],"worker":["mnist-worker-0-0.mnist:2222",'
    '"mnist-worker-0-1.mnist:2222"]},"task":{"type":"%s","index":$(TF_CONFIG_TASK_INDEX)},"environment":"cloud"}'
)


def _provider_replica(kind: str, count: int, **job_spec: Any) -> dict[str, Any]:
    return {
        "name": kind,
        "replicas": 1,
        "template": {
            "spec": {
                "completionMode": "Indexed",
                "completions": count,
                "parallelism": count,
                **job_spec,
                "podReplacementPolicy": "Failed",
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "tensorflow",
                                "image": "tensorflow/tensorflow:2.15.0",
                                "command": ["python", "train.py"],
                                "env": [
                                    {
                                        "name": "TF_CONFIG_TASK_INDEX",
                                        "valueFrom": {
                                            "fieldRef": {
                                                "fieldPath": "metadata.annotations"
                                                "['batch.kubernetes.io/job-completion-index']"
                                            }
                                        },
                                    },
                                    {"name": "TF_CONFIG", "value": _TF_CONFIG % kind},
                                ],
                            }
                        ],
                        "restartPolicy": "Never",
                    }
                },
            }
        },
    }


#: What tfjob_provider's translation writes for a TFJob of 1 PS (Never) and 2 workers (ExitCode)
#: with runPolicy.backoffLimit 3 (docs/guides/jobset.md), written out here (the sandbox never imports
#: the provider).
PROVIDER_JOBSET: dict[str, Any] = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "mnist", "annotations": {"tfjob-provider.airflow.apache.org/backoff-limit": "3"}},
    "spec": {
        "replicatedJobs": [
            _provider_replica("ps", 1, backoffLimit=0),
            _provider_replica(
                "worker",
                2,
                backoffLimit=2147483647,
                podFailurePolicy={
                    "rules": [
                        {
                            "action": "FailJob",
                            "onExitCodes": {
                                "containerName": "tensorflow",
                                "operator": "In",
                                "values": list(range(1, 128)),
                            },
                        },
                        {
                            "action": "Ignore",
                            "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                        },
                        {
                            "action": "Ignore",
                            "onExitCodes": {
                                "containerName": "tensorflow",
                                "operator": "In",
                                "values": list(range(128, 256)),
                            },
                        },
                    ]
                },
                successPolicy={"rules": [{"succeededIndexes": "0"}]},
            ),
        ],
        "network": {"enableDNSHostnames": True, "subdomain": "mnist", "publishNotReadyAddresses": True},
        "successPolicy": {"operator": "All", "targetReplicatedJobs": ["worker"]},
    },
}


def test_the_providers_jobset_is_accepted_as_written(js: JobSetClient) -> None:
    """Nothing the provider writes is pruned (fieldValidation Strict), and its Jobs carry it all."""
    created = js.custom.create_namespaced_custom_object(
        GROUP, VERSION, js.namespace, PLURAL, PROVIDER_JOBSET, field_validation="Strict"
    )
    for ours, stored in zip(
        PROVIDER_JOBSET["spec"]["replicatedJobs"], created["spec"]["replicatedJobs"], strict=True
    ):
        assert {k: v for k, v in stored["template"]["spec"].items()} == ours["template"]["spec"]
    assert created["metadata"]["annotations"] == PROVIDER_JOBSET["metadata"]["annotations"]
    assert created["spec"]["successPolicy"] == PROVIDER_JOBSET["spec"]["successPolicy"]
    assert "failurePolicy" not in created["spec"]
    jobs = js.wait_jobs(2)
    worker = jobs["mnist-worker-0"]
    assert worker["spec"]["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    assert worker["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] == list(range(1, 128))
    assert (
        worker["spec"]["completionMode"],
        worker["spec"]["completions"],
        worker["spec"]["parallelism"],
    ) == (
        "Indexed",
        2,
        2,
    )
    assert worker["spec"]["template"]["spec"]["subdomain"] == "mnist"
    assert jobs["mnist-ps-0"]["spec"]["backoffLimit"] == 0
    assert js.core.read_namespaced_service("mnist", js.namespace).spec.cluster_ip == "None"


def test_a_job_the_api_refuses_is_a_job_creation_failed_event(js: JobSetClient) -> None:
    """JobSet's webhook does not validate the Job template; the Job's own validation refuses it at
    creation, which the controller reports as a JobCreationFailed warning and retries with back-off."""
    manifest = upstream_jobset()
    manifest["spec"]["replicatedJobs"] = [replicated_job("always")]
    manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    js.create(manifest)
    event = wait_for(
        lambda: js.core.list_namespaced_event(js.namespace, field_selector="reason=JobCreationFailed").items,
        what="a JobCreationFailed event",
    )[0]
    assert event.type == "Warning"
    assert event.message.startswith(
        'job "test-js-always-0" creation failed with error: Job.batch "test-js-always-0" is invalid'
    )
    assert "restartPolicy" in event.message
    assert js.jobs() == {}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed on this machine")
def test_kubectl_apply_and_get_jobsets(js: JobSetClient, api_sandbox: Sandbox, tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    path = tmp_path / "jobset.yaml"
    path.write_text(yaml.safe_dump(upstream_jobset()))
    env = {**os.environ, "KUBECONFIG": str(api_sandbox.kubeconfig_path)}

    def run(*args: str) -> str:
        done = subprocess.run(
            [kubectl, "-n", js.namespace, *args], capture_output=True, text=True, timeout=60, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert run("apply", "-f", str(path)).strip() == "jobset.jobset.x-k8s.io/test-js created"
    js.wait_jobs(4)
    for name in ["test-js-replicated-job-a-0", *(f"test-js-replicated-job-b-{i}" for i in range(3))]:
        js.complete(name)
    js.wait_condition("Completed")
    header, row = run("get", "jobsets").strip().splitlines()
    assert header.split() == ["NAME", "TERMINALSTATE", "RESTARTS", "COMPLETED", "SUSPENDED", "AGE"]
    assert row.split()[:3] == ["test-js", "Completed", "True"]  # Restarts and Suspended unset: blank
