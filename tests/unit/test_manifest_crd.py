"""The manifests the provider builds and accepts must also pass the TFJob CRD's schema.

The CRD is the project's own, the one ``tfjob-sandbox`` installs
(``tfjob_sandbox/admission/crds/tfjobs.yaml``); ``test_crd_cross_check.py`` holds it against the
training operator's where that file is available. jsonschema does not know Kubernetes' extensions,
so the helper here approximates the API server: ``x-kubernetes-int-or-string`` means integer or
string, int32/int64 formats bound the value, and — as with ``fieldValidation=Strict`` — an object
schema that lists its properties rejects any other field unless it says
``x-kubernetes-preserve-unknown-fields``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from tfjob_sandbox.admission.tfjob_crd import TFJOB_CRD_FILE

from tfjob_provider.manifest import (
    ManifestError,
    Problem,
    ReplicaSpec,
    build_tfjob,
    load_tfjob,
    validate_tfjob,
)

CRD_PATH = Path(str(resources.files("tfjob_sandbox").joinpath(TFJOB_CRD_FILE)))
HERE = Path(__file__).parent
EXAMPLES = sorted(
    [*(HERE / "manifest_examples").glob("*.yaml"), *(HERE / "manifest_examples").glob("*.json")]
)
CORPUS = sorted([*(HERE / "manifest_corpus").glob("*.yaml"), *(HERE / "manifest_corpus").glob("*.json")])

_FORMAT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _kubernetes_semantics(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of an OpenAPI v3 CRD schema that jsonschema evaluates roughly as the API server would."""
    result = {key: value for key, value in schema.items() if key != "description"}
    if result.get("x-kubernetes-int-or-string"):
        result.pop("type", None)
        result.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    bounds = _FORMAT_BOUNDS.get(result.get("format", ""))
    if bounds is not None and result.get("type") == "integer":
        result.setdefault("minimum", bounds[0])
        result.setdefault("maximum", bounds[1])
    if "properties" in result:
        result["properties"] = {
            name: _kubernetes_semantics(sub) for name, sub in result["properties"].items()
        }
        if not result.get("x-kubernetes-preserve-unknown-fields"):
            result.setdefault("additionalProperties", False)
    if isinstance(result.get("additionalProperties"), Mapping):
        result["additionalProperties"] = _kubernetes_semantics(result["additionalProperties"])
    if isinstance(result.get("items"), Mapping):
        result["items"] = _kubernetes_semantics(result["items"])
    for combinator in ("anyOf", "allOf", "oneOf"):
        if combinator in result:
            result[combinator] = [_kubernetes_semantics(sub) for sub in result[combinator]]
    return result


@cache
def tfjob_schema_validator() -> jsonschema.protocols.Validator:
    crd = yaml.safe_load(CRD_PATH.read_text(encoding="utf-8"))
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema = _kubernetes_semantics(version["schema"]["openAPIV3Schema"])
    return jsonschema.Draft4Validator(schema)


def crd_errors(manifest: Mapping[str, Any]) -> list[str]:
    errors = tfjob_schema_validator().iter_errors(manifest)
    return sorted(
        f"{'.'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}" for error in errors
    )


# -- the schema helper itself -----------------------------------------------------------------------


def _minimal() -> dict[str, Any]:
    return build_tfjob(name="probe", image="registry.example/probe:1")


def test_the_crd_is_the_tfjob_crd_of_kubeflow_org_v1() -> None:
    crd = yaml.safe_load(CRD_PATH.read_text(encoding="utf-8"))
    assert crd["spec"]["group"] == "kubeflow.org"
    assert crd["spec"]["names"]["kind"] == "TFJob"
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1"]


def test_the_schema_check_rejects_unknown_fields_wrong_types_and_out_of_range_integers() -> None:
    unknown = _minimal()
    unknown["spec"]["tfReplicaSpecs"]["Worker"]["restartpolicy"] = "Never"
    wrong_type = _minimal()
    wrong_type["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "2"
    too_big = _minimal()
    too_big["spec"]["runPolicy"]["backoffLimit"] = 2**31
    assert any("restartpolicy" in error for error in crd_errors(unknown))
    assert any("replicas" in error for error in crd_errors(wrong_type))
    assert any("backoffLimit" in error for error in crd_errors(too_big))


def test_the_schema_check_treats_int_or_string_quantities_as_kubernetes_does() -> None:
    manifest = build_tfjob(
        name="quantities",
        image="registry.example/probe:1",
        scheduling_policy={"minResources": {"cpu": 4, "memory": "16Gi"}},
    )
    assert crd_errors(manifest) == []
    manifest["spec"]["runPolicy"]["schedulingPolicy"]["minResources"]["cpu"] = [4]
    assert crd_errors(manifest) != []


# -- built manifests -------------------------------------------------------------------------------

BUILD_PARAMETERS: dict[str, dict[str, Any]] = {
    "minimal": {"name": "mnist", "image": "registry.example/mnist:1.0"},
    "chief-ps-workers-evaluator": {
        "name": "resnet",
        "image": "registry.example/resnet:2.15",
        "command": ["python", "-m", "trainer"],
        "args": ["--epochs", 90],
        "env": {"TF_CPP_MIN_LOG_LEVEL": "2", "SEED": 7, "DEBUG": False},
        "chief": ReplicaSpec(1, restart_policy="ExitCode"),
        "worker": ReplicaSpec(
            8,
            restart_policy="OnFailure",
            resources={"limits": {"nvidia.com/gpu": 1}},
            node_selector={"accelerator": "a100"},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            env={"NCCL_DEBUG": "INFO"},
        ),
        "ps": ReplicaSpec(2, image="registry.example/resnet-cpu:2.15", resources={"requests": {"cpu": "4"}}),
        "evaluator": 1,
    },
    "replicas-as-templated-dicts": {
        "name": "templated",
        "image": "registry.example/mnist:1.0",
        "worker": {"replicas": "3", "restart_policy": "ExitCode", "args": ["--shard", "{{ ti.map_index }}"]},
        "ps": "1",
        "backoff_limit": "2",
        "active_deadline_seconds": "7200",
        "ttl_seconds_after_finished": "600",
        "suspend": "false",
    },
    "env-as-kubernetes-list": {
        "name": "env-list",
        "image": "registry.example/mnist:1.0",
        "env": [
            {"name": "PLAIN", "value": "1"},
            {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    },
    "env-mapping-with-value-from": {
        "name": "env-mapping",
        "image": "registry.example/mnist:1.0",
        "env": {"TOKEN": {"secretKeyRef": {"name": "s", "key": "token"}}, "EMPTY": None},
    },
    "every-run-policy-field": {
        "name": "run-policy",
        "image": "registry.example/mnist:1.0",
        "chief": 1,
        "worker": 2,
        "backoff_limit": 0,
        "active_deadline_seconds": 3600,
        "clean_pod_policy": "All",
        "ttl_seconds_after_finished": 0,
        "suspend": True,
        "managed_by": "kueue.x-k8s.io/multikueue",
        "scheduling_policy": {
            "min_available": 3,
            "queue": "research",
            "priority_class": "high",
            "schedule_timeout_seconds": 300,
            "min_resources": {"cpu": "12", "memory": "48Gi"},
        },
    },
    "worker-mode-all-workers": {
        "name": "all-workers",
        "image": "registry.example/mnist:1.0",
        "worker": 4,
        "success_policy": "AllWorkers",
        "clean_pod_policy": None,
    },
    "dynamic-workers": {
        "name": "elastic",
        "image": "registry.example/elastic:1",
        "chief": 1,
        "worker": 4,
        "enable_dynamic_worker": True,
    },
    "pod-level-settings": {
        "name": "pod-settings",
        "namespace": "research",
        "image": "registry.example/mnist:1.0",
        "labels": {"team": "ml"},
        "annotations": {"example.com/ticket": "ML-1234"},
        "pod_labels": {"cost-center": "research"},
        "pod_annotations": {"sidecar.istio.io/inject": "false"},
        "service_account_name": "trainer",
        "image_pull_policy": "IfNotPresent",
        "image_pull_secrets": ["registry-credentials"],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}}],
        "volume_mounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
        "node_selector": {"pool": "training"},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"}
        ],
        "resources": {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}},
    },
}


@pytest.mark.parametrize("parameters", BUILD_PARAMETERS.values(), ids=list(BUILD_PARAMETERS))
def test_every_built_manifest_passes_the_crd_schema(parameters: dict[str, Any]) -> None:
    manifest = build_tfjob(**parameters)
    assert crd_errors(manifest) == []


# -- accepted examples -----------------------------------------------------------------------------


CANONICAL_REPLICA_TYPES = {"Chief", "Evaluator", "Master", "PS", "Worker"}


@pytest.mark.parametrize("example", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_valid_examples_pass_both_the_validator_and_the_crd_schema(example: Path) -> None:
    loaded = load_tfjob(example)
    normalised = validate_tfjob(loaded)
    assert crd_errors(normalised) == []
    # The CRD takes only the canonical replica keys; the validator rewrites other spellings
    # (``ps``, ``worker``) before a manifest is submitted, so those are the CRD's only complaint.
    other_keys = sorted(set(loaded["spec"]["tfReplicaSpecs"]) - CANONICAL_REPLICA_TYPES)
    expected = (
        [f"spec.tfReplicaSpecs: Additional properties are not allowed ({_quoted(other_keys)} unexpected)"]
        if other_keys
        else []
    )
    assert crd_errors(loaded) == expected


def _quoted(keys: list[str]) -> str:
    names = ", ".join(repr(key) for key in keys)
    return f"{names} {'was' if len(keys) == 1 else 'were'}"


def test_there_are_valid_examples_to_check() -> None:
    assert len(EXAMPLES) >= 5


# -- agreement on unknown fields -------------------------------------------------------------------


def _problems(path: Path) -> list[Problem]:
    try:
        validate_tfjob(load_tfjob(path))
    except ManifestError as error:
        return error.problems
    return []


def _last_segment(field: str) -> str:
    """``restartpolicy`` of ``spec.x.restartpolicy``; ``a b`` of ``spec["a b"]`` (not an identifier)."""
    if field.endswith('"]'):
        return field[field.rindex('["') + 2 : -2]
    return field.rsplit(".", 1)[-1]


def _unknown_field_names(path: Path) -> list[str]:
    """The field names the validator rejected as unknown in this corpus case (last path segment)."""
    return [
        _last_segment(problem.field)
        for problem in _problems(path)
        if problem.message.startswith("unknown field")
    ]


UNKNOWN_FIELD_CASES = [case for case in CORPUS if _unknown_field_names(case)]


def test_the_corpus_has_unknown_field_cases() -> None:
    assert len(UNKNOWN_FIELD_CASES) >= 6


@pytest.mark.parametrize("case", UNKNOWN_FIELD_CASES, ids=[path.name for path in UNKNOWN_FIELD_CASES])
def test_unknown_fields_the_validator_rejects_are_rejected_by_the_crd_too(case: Path) -> None:
    document = yaml.safe_load(case.read_text(encoding="utf-8"))
    errors = crd_errors(document)
    for name in _unknown_field_names(case):
        assert any(f"'{name}'" in error and "unexpected" in error for error in errors), (name, errors)


def test_the_validator_leaves_a_valid_manifest_unchanged_apart_from_replica_keys() -> None:
    lowercase = load_tfjob(HERE / "manifest_examples" / "lowercase-replica-keys.yaml")
    original = copy.deepcopy(lowercase)
    normalised = validate_tfjob(lowercase)
    assert lowercase == original
    assert list(normalised["spec"]["tfReplicaSpecs"]) == ["PS", "Worker"]
    assert normalised["spec"]["tfReplicaSpecs"]["PS"] == original["spec"]["tfReplicaSpecs"]["ps"]
    assert {k: v for k, v in normalised["spec"].items() if k != "tfReplicaSpecs"} == {
        k: v for k, v in original["spec"].items() if k != "tfReplicaSpecs"
    }
    assert normalised["metadata"] == original["metadata"]
