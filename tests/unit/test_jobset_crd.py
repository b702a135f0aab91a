"""Every JobSet the translation writes is accepted, unpruned, by JobSet's own CRD schema.

The API server prunes fields a structural schema does not declare (silently, unless the client
asks for strict field validation): a Job ``successPolicy`` sent to a JobSet controller whose CRD
predates it would vanish, and worker 0 would no longer decide.  So the schema of the oldest
supported release (``jobset_crd/``, v0.6.0) is turned into a JSON Schema that refuses undeclared
fields, and every translation of the builder's and the corpus's manifests is validated against
it.  CEL rules (``x-kubernetes-validations``: immutability on update) are not checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.unit.jobset_states import make_jobset
from tfjob_provider._jobset import names

CRD = Path(__file__).parent / "jobset_crd" / "jobset.x-k8s.io_jobsets-v0.6.0.yaml"
_FORMAT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _strict(schema: Any) -> Any:
    """An OpenAPI v3 structural schema as a JSON Schema that refuses what the API server prunes."""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: _strict(value) for key, value in schema.items() if not key.startswith("x-kubernetes-")}
    bounds = _FORMAT_BOUNDS.get(schema.get("format", ""))
    if bounds is not None and schema.get("type") == "integer":
        converted.setdefault("minimum", bounds[0])
        converted.setdefault("maximum", bounds[1])
    if schema.get("x-kubernetes-int-or-string") and "anyOf" not in schema:
        converted["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    preserve = schema.get("x-kubernetes-preserve-unknown-fields")
    if schema.get("type") == "object" and "properties" in schema and not preserve:
        converted.setdefault("additionalProperties", False)
    if schema.get("nullable"):
        converted.pop("nullable")
        if "type" in converted:
            converted["type"] = [converted["type"], "null"]
    return converted


@cache
def jobset_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
    version = next(item for item in crd["spec"]["versions"] if item["name"] == names.VERSION)
    schema: dict[str, Any] = _strict(version["schema"]["openAPIV3Schema"])
    return schema


def schema_errors(document: Any) -> list[str]:
    validator = jsonschema.Draft7Validator(jobset_schema())
    return [
        f"{'.'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(document)
    ]


BUILDS: dict[str, dict[str, Any]] = {
    "PS layout, ExitCode": {"chief": 1, "worker": 4, "ps": 2, "restart_policy": "ExitCode"},
    "worker mode, OnFailure with limits": {
        "worker": 3,
        "restart_policy": "OnFailure",
        "backoff_limit": 5,
        "active_deadline_seconds": 3600,
        "ttl_seconds_after_finished": 600,
    },
    "AllWorkers with an evaluator": {"worker": 2, "evaluator": 1, "success_policy": "AllWorkers"},
    "single worker, suspended, MultiKueue": {
        "worker": 1,
        "suspend": True,
        "managed_by": "kueue.x-k8s.io/multikueue",
    },
    "everything the pod template takes": {
        "chief": {
            "replicas": 1,
            "restart_policy": "OnFailure",
            "resources": {"limits": {"nvidia.com/gpu": 1}},
        },
        "worker": 2,
        "env": {"EPOCHS": "10", "POD": {"fieldRef": {"fieldPath": "metadata.name"}}},
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "mnist"}}],
        "volume_mounts": [{"name": "data", "mountPath": "/data"}],
        "node_selector": {"pool": "gpu"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "pod_labels": {"team": "ml"},
        "pod_annotations": {"sidecar.istio.io/inject": "false"},
        "labels": {"app": "mnist"},
        "service_account_name": "trainer",
        "image_pull_secrets": ["regcred"],
    },
}


def _translations() -> Iterator[tuple[str, dict[str, Any]]]:
    for case, build in BUILDS.items():
        jobset = make_jobset(**build)
        jobset.pop("status")
        yield case, jobset


@pytest.mark.parametrize(("case", "jobset"), list(_translations()), ids=list(BUILDS))
def test_the_translation_validates_against_the_jobset_crd(case: str, jobset: dict[str, Any]) -> None:
    assert schema_errors(jobset) == [], case


def test_the_strict_schema_refuses_what_the_api_server_would_prune() -> None:
    jobset = make_jobset(worker=2)
    jobset.pop("status")
    job_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    job_spec["successPolicies"] = job_spec.pop("successPolicy")  # a field v0.6.0 does not know
    jobset["spec"]["network"]["enableDnsHostnames"] = True
    errors = schema_errors(jobset)
    assert any("successPolicies" in error for error in errors), errors
    assert any("enableDnsHostnames" in error for error in errors), errors


def test_the_schema_knows_every_field_the_worker0_rule_needs() -> None:
    """Guards the claim of docs/guides/jobset.md: v0.6.0 is the oldest JobSet that keeps these fields."""
    job_spec = jobset_schema()["properties"]["spec"]["properties"]["replicatedJobs"]["items"]["properties"][
        "template"
    ]["properties"]["spec"]["properties"]
    for field in (
        "successPolicy",
        "podFailurePolicy",
        "podReplacementPolicy",
        "completionMode",
        "backoffLimit",
    ):
        assert field in job_spec, field
    network = jobset_schema()["properties"]["spec"]["properties"]["network"]["properties"]
    assert {"enableDNSHostnames", "subdomain", "publishNotReadyAddresses"} <= set(network)
