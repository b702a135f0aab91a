"""batch/v1 Jobs served like kube-apiserver: discovery, defaults, 422 validation, status, deletion."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from tfjob_sandbox import Sandbox
from tfjob_sandbox.testing import job_manifest, pod_manifest, wait_for


@pytest.fixture
def batch_v1(module_api_client: Any) -> client.BatchV1Api:
    return client.BatchV1Api(module_api_client)


def _invalid(error: ApiException) -> dict[str, Any]:
    body = json.loads(error.body)
    assert error.status == 422 and body["reason"] == "Invalid"
    return body


def test_discovery_lists_jobs_with_status(module_api_client: Any) -> None:
    resources = client.BatchV1Api(module_api_client).get_api_resources()
    names = {r.name: r for r in resources.resources}
    assert resources.group_version == "batch/v1"
    assert names["jobs"].kind == "Job" and names["jobs"].namespaced
    assert "jobs/status" in names
    groups = {g.name for g in client.ApisApi(module_api_client).get_api_versions().groups}
    assert "batch" in groups


def test_create_fills_kube_apiserver_defaults(batch_v1: client.BatchV1Api, namespace: str) -> None:
    job = batch_v1.create_namespaced_job(namespace, job_manifest("defaults"))
    spec, uid = job.spec, job.metadata.uid
    assert (spec.completions, spec.parallelism, spec.backoff_limit) == (1, 1, 6)
    assert (spec.completion_mode, spec.suspend, spec.pod_replacement_policy) == (
        "NonIndexed",
        False,
        "TerminatingOrFailed",
    )
    assert spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    assert spec.template.metadata.labels == {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "defaults",
        "controller-uid": uid,
        "job-name": "defaults",
    }
    assert spec.template.spec.termination_grace_period_seconds == 30


def test_indexed_with_failure_policy_defaults_to_replace_failed(
    batch_v1: client.BatchV1Api, namespace: str
) -> None:
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    manifest = job_manifest(
        "indexed", completionMode="Indexed", completions=3, parallelism=3, podFailurePolicy=policy
    )
    job = batch_v1.create_namespaced_job(namespace, manifest)
    assert job.spec.pod_replacement_policy == "Failed"
    assert job.spec.pod_failure_policy.rules[0].on_pod_conditions[0].status == "True"
    assert (job.spec.completions, job.spec.parallelism) == (3, 3)


def _indexed(**spec: Any) -> dict[str, Any]:
    return {"completionMode": "Indexed", "completions": 2, "parallelism": 2, **spec}


INVALID_CASES = [
    pytest.param(
        job_manifest("x", restart_policy="Always"),
        "spec.template.spec.restartPolicy",
        'Required value: valid values: "OnFailure", "Never"',
        id="restartPolicy-Always",
    ),
    pytest.param(
        job_manifest(
            "x",
            restart_policy="OnFailure",
            podFailurePolicy={
                "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]
            },
        ),
        "spec.template.spec.restartPolicy",
        'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified',
        id="podFailurePolicy-needs-Never",
    ),
    pytest.param(
        job_manifest("x", successPolicy={"rules": [{"succeededCount": 1}]}),
        "spec.successPolicy",
        "requires indexed completion mode",
        id="successPolicy-needs-Indexed",
    ),
    pytest.param(
        job_manifest("x", **_indexed(parallelism=100_001)),
        "spec.parallelism",
        "Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed",
        id="Indexed-parallelism-cap",
    ),
    pytest.param(
        job_manifest("x", backoffLimitPerIndex=1),
        "spec.backoffLimitPerIndex",
        "Invalid value: 1: requires indexed completion mode",
        id="backoffLimitPerIndex-needs-Indexed",
    ),
    pytest.param(
        job_manifest("x", completionMode="Indexed", parallelism=2),
        "spec.completions",
        "Required value: when completion mode is Indexed",
        id="Indexed-needs-completions",
    ),
    pytest.param(
        job_manifest(
            "x",
            podFailurePolicy={
                "rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [0]}}]
            },
        ),
        "spec.podFailurePolicy.rules[0].onExitCodes.values[0]",
        "must not be 0 for the In operator",
        id="onExitCodes-In-0",
    ),
    pytest.param(
        job_manifest("x", **_indexed(successPolicy={"rules": [{"succeededIndexes": "0-5"}]})),
        "spec.successPolicy.rules[0].succeededIndexes",
        "error parsing succeededIndexes",
        id="succeededIndexes-beyond-completions",
    ),
]


@pytest.mark.parametrize(("manifest", "field", "message"), INVALID_CASES)
def test_invalid_jobs_get_422(
    batch_v1: client.BatchV1Api, namespace: str, manifest: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ApiException) as raised:
        batch_v1.create_namespaced_job(namespace, manifest)
    body = _invalid(raised.value)
    causes = {cause["field"]: cause["message"] for cause in body["details"]["causes"]}
    assert field in causes, causes
    assert message in causes[field]
    assert body["message"].startswith('Job.batch "x" is invalid: ')


def test_template_and_selector_are_immutable(batch_v1: client.BatchV1Api, namespace: str) -> None:
    batch_v1.create_namespaced_job(namespace, job_manifest("frozen", command=["sleep", "30"]))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "other"}]}}}}
    with pytest.raises(ApiException) as raised:
        batch_v1.patch_namespaced_job("frozen", namespace, patch)
    causes = {cause["field"] for cause in _invalid(raised.value)["details"]["causes"]}
    assert "spec.template" in causes


def test_status_subresource_and_table(
    batch_v1: client.BatchV1Api, namespace: str, module_sandbox: Sandbox
) -> None:
    batch_v1.create_namespaced_job(namespace, job_manifest("table", command=["sleep", "30"]))
    batch_v1.patch_namespaced_job("table", namespace, {"status": {"active": 5}})
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return
    env = {**os.environ, "KUBECONFIG": str(module_sandbox.kubeconfig_path)}
    out = subprocess.run(
        [kubectl, "get", "jobs", "-n", namespace],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    ).stdout
    header, row = out.strip().splitlines()
    assert header.split()[:4] == ["NAME", "STATUS", "COMPLETIONS", "DURATION"]
    assert row.split()[0] == "table"


@pytest.mark.parametrize("propagation", ["Background", "Foreground"])
def test_deleting_a_job_collects_its_pods(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str, propagation: str
) -> None:
    job = batch_v1.create_namespaced_job(namespace, job_manifest("owner", suspend=True))
    owned = pod_manifest("owned", command=["sleep", "30"])
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "owner",
            "uid": job.metadata.uid,
            "controller": False,
        }
    ]
    core_v1.create_namespaced_pod(namespace, owned)
    batch_v1.delete_namespaced_job("owner", namespace, propagation_policy=propagation, grace_period_seconds=0)

    def pods_gone() -> bool:
        return not core_v1.list_namespaced_pod(namespace).items

    assert wait_for(pods_gone, what="the Job's pods to be collected")


def test_deleting_a_job_without_policy_orphans_its_pods_with_a_warning(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    job = batch_v1.create_namespaced_job(namespace, job_manifest("orphaner", suspend=True))
    owned = pod_manifest("kept", command=["sleep", "30"])
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "orphaner",
            "uid": job.metadata.uid,
            "controller": False,
        }
    ]
    core_v1.create_namespaced_pod(namespace, owned)
    response = batch_v1.api_client.call_api(
        f"/apis/batch/v1/namespaces/{namespace}/jobs/orphaner",
        "DELETE",
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    assert "child pods are preserved by default" in response.getheader("Warning")
    pod = core_v1.read_namespaced_pod("kept", namespace)
    assert not pod.metadata.owner_references
