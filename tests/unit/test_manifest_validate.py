"""validate_tfjob and resolve_namespace: what is accepted, how it is normalised, how problems read."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfjob_provider.manifest import (
    ManifestError,
    Problem,
    ReplicaSpec,
    build_tfjob,
    resolve_namespace,
    validate_tfjob,
)

IMAGE = "registry.example/mnist:1.0"


def _replica(replicas: int = 1, restart_policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": "tensorflow", "image": IMAGE}]}},
    }
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    return spec


def _manifest(replica_specs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "mnist"},
        "spec": {"tfReplicaSpecs": replica_specs, **spec},
    }


def _fields(manifest: Any) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        validate_tfjob(manifest)
    return [problem.field for problem in caught.value.problems]


def test_replica_keys_in_any_case_are_re_cased_like_the_operators_defaulter() -> None:
    manifest = _manifest(
        {"chief": _replica(), "ps": _replica(2), "WORKER": _replica(3), "evaluator": _replica()}
    )
    assert list(validate_tfjob(manifest)["spec"]["tfReplicaSpecs"]) == ["Chief", "PS", "Worker", "Evaluator"]
    assert list(validate_tfjob(_manifest({"mAsTeR": _replica()}))["spec"]["tfReplicaSpecs"]) == ["Master"]


def test_the_result_is_a_deep_copy_and_validation_is_idempotent() -> None:
    manifest = _manifest({"worker": _replica(2)})
    original = copy.deepcopy(manifest)
    normalised = validate_tfjob(manifest)
    normalised["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert manifest == original
    assert validate_tfjob(validate_tfjob(manifest)) == validate_tfjob(manifest)


@pytest.mark.parametrize(
    "replica_specs",
    [
        {"Chief": _replica(1, "ExitCode"), "Worker": _replica(2, "Always"), "PS": _replica(1, "Always")},
        {
            "Chief": _replica(1, "OnFailure"),
            "Worker": _replica(0),
        },  # workers may be scaled to 0 in chief mode
        {"Master": _replica(1, "Never"), "Evaluator": _replica(1, "Always")},
        {"Worker": _replica(4, "ExitCode"), "PS": _replica(2, "Always")},
    ],
    ids=["always-on-non-deciding-types", "zero-workers-with-chief", "master-and-evaluator", "worker-mode"],
)
def test_restart_policies_are_only_refused_where_they_prevent_success(replica_specs: dict[str, Any]) -> None:
    assert validate_tfjob(_manifest(replica_specs))["spec"]["tfReplicaSpecs"].keys() == replica_specs.keys()


def test_status_and_explicit_nulls_are_accepted_as_the_api_server_would() -> None:
    manifest = _manifest({"Worker": _replica()}, runPolicy={"backoffLimit": None, "cleanPodPolicy": None})
    manifest["status"] = {"conditions": []}
    manifest["spec"]["successPolicy"] = None
    assert validate_tfjob(manifest)["status"] == {"conditions": []}


def test_template_restart_policy_is_accepted_when_it_agrees_with_the_replica() -> None:
    worker = _replica(2, "ExitCode")
    worker["template"]["spec"]["restartPolicy"] = "Never"  # what the operator writes for ExitCode
    validate_tfjob(_manifest({"Worker": worker}))


def test_every_problem_is_reported_once_on_its_own_line() -> None:
    manifest = _manifest({"Worker": _replica(-1, "Sometimes")}, runPolicy={"backoffLimit": "3"})
    manifest["metadata"]["name"] = "Bad Name"
    with pytest.raises(ManifestError) as caught:
        validate_tfjob(manifest)
    error = caught.value
    assert [p.field for p in error.problems] == [
        "metadata.name",
        "spec.runPolicy.backoffLimit",
        "spec.tfReplicaSpecs.Worker.replicas",
        "spec.tfReplicaSpecs.Worker.restartPolicy",
    ]
    lines = str(error).splitlines()
    assert lines[0] == "TFJob manifest is invalid (4 problems):"
    assert lines[1:] == [
        f"  - {problem.field}: {problem.message} Fix: {problem.fix}" for problem in error.problems
    ]


def test_non_json_values_are_reported_once_not_again_by_the_type_checks() -> None:
    worker = _replica()
    worker["replicas"] = float("nan")
    assert _fields(_manifest({"Worker": worker})) == ["spec.tfReplicaSpecs.Worker.replicas"]


def test_a_manifest_that_is_not_a_mapping_is_one_problem() -> None:
    assert _fields(["not", "a", "mapping"]) == ["document"]


def test_manifest_error_needs_problems_and_reads_in_the_singular_for_one() -> None:
    with pytest.raises(ValueError, match="at least one problem"):
        ManifestError([])
    assert (
        str(ManifestError([Problem("f", "m.", "x.")]))
        == "TFJob manifest is invalid (1 problem):\n  - f: m. Fix: x."
    )


# --- namespaces ------------------------------------------------------------------------------------


def _with_namespace(namespace: str | None) -> dict[str, Any]:
    return build_tfjob(name="m", image=IMAGE, namespace=namespace)


@pytest.mark.parametrize(
    ("written", "requested", "expected"),
    [
        (None, None, "fallback-ns"),
        (None, "asked", "asked"),
        ("written", None, "written"),
        ("same", "same", "same"),
    ],
)
def test_the_namespace_comes_from_the_manifest_the_task_or_the_fallback(
    written: str | None, requested: str | None, expected: str
) -> None:
    assert (
        resolve_namespace(_with_namespace(written), requested=requested, fallback="fallback-ns") == expected
    )


def test_a_namespace_conflict_is_a_problem_not_a_silent_choice() -> None:
    with pytest.raises(ManifestError) as caught:
        resolve_namespace(_with_namespace("team-a"), requested="team-b", fallback="default")
    (problem,) = caught.value.problems
    assert problem.field == "metadata.namespace"
    assert '"team-a"' in problem.message and '"team-b"' in problem.message
    assert "Remove metadata.namespace" in problem.fix


def test_an_invalid_resolved_namespace_is_a_problem() -> None:
    with pytest.raises(ManifestError, match="not a valid namespace name"):
        resolve_namespace({"metadata": {}}, requested="Team_B", fallback="default")


# --- robustness ------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)
manifest_keys = st.sampled_from(
    ["apiVersion", "kind", "metadata", "spec", "status", "tfReplicaSpecs", "name"]
)
manifest_like = st.dictionaries(manifest_keys | st.text(max_size=6), json_values, max_size=6)


@given(manifest_like)
def test_validation_only_ever_raises_manifest_error_and_never_changes_its_input(
    candidate: dict[str, Any],
) -> None:
    before = copy.deepcopy(candidate)
    try:
        validate_tfjob(candidate)
    except ManifestError as error:
        assert error.problems and all(problem.field and problem.fix for problem in error.problems)
    assert repr(candidate) == repr(before)


@given(
    st.dictionaries(
        st.sampled_from(["Chief", "worker", "PS", "Evaluator", "Master"]), json_values, max_size=5
    )
)
def test_odd_replica_specs_never_crash_the_validator(replica_specs: dict[str, Any]) -> None:
    try:
        validate_tfjob(_manifest(replica_specs))
    except ManifestError as error:
        assert error.problems


def test_replica_spec_values_are_frozen() -> None:
    spec = ReplicaSpec(2, restart_policy="OnFailure")
    with pytest.raises(AttributeError):
        spec.replicas = 3  # type: ignore[misc]
