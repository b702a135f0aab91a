"""Deterministic TFJob names, label sanitising and the Airflow identity stamped on every TFJob."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tfjob_provider.constants import (
    ANNOTATION_DAG_ID,
    ANNOTATION_MAP_INDEX,
    ANNOTATION_RUN_ID,
    ANNOTATION_TASK_ID,
    ANNOTATION_TRY_NUMBER,
    LABEL_DAG_ID,
    LABEL_MANAGED_BY,
    LABEL_MAP_INDEX,
    LABEL_RUN_ID,
    LABEL_TASK_ID,
    LABEL_TRY_NUMBER,
    MANAGED_BY_VALUE,
)
from tfjob_provider.manifest import build_tfjob, validate_tfjob
from tfjob_provider.naming import (
    JOB_NAME_MAX_LENGTH,
    identity_annotations,
    identity_labels,
    is_label_value,
    is_qualified_key,
    job_name_for,
    matches_identity,
    sanitize_label_value,
    stamp_identity,
)

# Independent restatements of the Kubernetes rules, so the tests do not trust naming.py's own regexes.
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")

airflow_ids = st.text(min_size=0, max_size=300)
map_indices = st.integers(min_value=-1, max_value=10**6)
identities = st.tuples(airflow_ids, airflow_ids, airflow_ids, map_indices)

NASTY_IDS = [
    "",
    "-",
    "___",
    "42_etl",
    "0",
    "Café_ÉTL",
    "数据管道",
    "dag.with.dots",
    "task_group.inner_task",
    "UPPER-case_Mixed.123",
    "a" * 250,
    "manual__2024-01-01T00:00:00+00:00",
    "emoji🚀launch",
    "trailing-dash-",
    "  spaces  inside  ",
]

# --- job_name_for ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dag_id", NASTY_IDS)
@pytest.mark.parametrize("task_id", ["train", "", "9lives", "x" * 200, "τ.task"])
def test_job_names_are_dns1035_labels_for_nasty_ids(dag_id: str, task_id: str) -> None:
    name = job_name_for(dag_id=dag_id, task_id=task_id, run_id="manual__2024-01-01T00:00:00+00:00")
    assert DNS1035.match(name), name
    assert len(name) <= JOB_NAME_MAX_LENGTH


@given(identities)
def test_job_names_are_always_short_dns1035_labels(identity: tuple[str, str, str, int]) -> None:
    dag_id, task_id, run_id, map_index = identity
    name = job_name_for(dag_id=dag_id, task_id=task_id, run_id=run_id, map_index=map_index)
    assert DNS1035.match(name), name
    assert len(name) <= JOB_NAME_MAX_LENGTH
    # Every pod and service the operator derives stays a valid name, even with three-digit indices.
    assert all(
        DNS1035.match(f"{name}-{kind}-999") for kind in ("chief", "master", "worker", "ps", "evaluator")
    )


@given(identities, identities)
def test_distinct_task_instances_get_distinct_names(
    first: tuple[str, str, str, int], second: tuple[str, str, str, int]
) -> None:
    assume(first != second)
    names = [job_name_for(dag_id=d, task_id=t, run_id=r, map_index=m) for d, t, r, m in (first, second)]
    assert names[0] != names[1]


def test_names_differ_when_only_the_map_index_or_run_differs() -> None:
    base = {"dag_id": "etl", "task_id": "train", "run_id": "scheduled__2024-01-01T00:00:00+00:00"}
    names = {
        job_name_for(**base),
        job_name_for(**base, map_index=0),
        job_name_for(**base, map_index=1),
        job_name_for(**{**base, "run_id": "scheduled__2024-01-02T00:00:00+00:00"}),
    }
    assert len(names) == 4


def test_names_carry_a_readable_prefix_from_dag_and_task() -> None:
    name = job_name_for(dag_id="Nightly_ETL", task_id="group.train_model", run_id="r1")
    assert name.startswith("nightly-etl-group-train-model-")
    assert job_name_for(dag_id="Café", task_id="entraîner", run_id="r").startswith("cafe-entrainer-")


def test_names_of_ids_starting_with_digits_or_without_letters_start_with_a_letter() -> None:
    assert job_name_for(dag_id="2024_reports", task_id="train", run_id="r").startswith(
        "tf-2024-reports-train-"
    )
    assert job_name_for(dag_id="数据", task_id="训练", run_id="r").startswith("tf-")


def test_long_ids_share_the_prefix_budget() -> None:
    name = job_name_for(dag_id="d" * 100, task_id="t" * 100, run_id="r")
    prefix = name.rsplit("-", 1)[0]
    assert prefix.count("d") >= 10 and prefix.count("t") >= 10


def test_names_are_the_same_in_another_interpreter_with_another_hash_seed() -> None:
    code = (
        "from tfjob_provider.naming import job_name_for;"
        "print(job_name_for(dag_id='dag', task_id='task', run_id='manual__1', map_index=3))"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(result.stdout.strip())
    assert outputs == {job_name_for(dag_id="dag", task_id="task", run_id="manual__1", map_index=3)}


def test_names_never_change_between_releases() -> None:
    # A changed name makes an upgraded provider miss (and duplicate) TFJobs submitted before the
    # upgrade, so these values are a compatibility promise: change them only with a migration note.
    run_id = "manual__2024-01-01T00:00:00+00:00"
    assert (
        job_name_for(dag_id="example_dag", task_id="train", run_id=run_id) == "example-dag-train-f7jcxedlga"
    )
    assert job_name_for(dag_id="example_dag", task_id="train", run_id=run_id, map_index=3) == (
        "example-dag-train-3jb726c43i"
    )


# --- label values ----------------------------------------------------------------------------------


@given(st.text(max_size=400))
def test_sanitised_label_values_are_always_valid(value: str) -> None:
    sanitised = sanitize_label_value(value)
    assert LABEL_VALUE.match(sanitised), sanitised
    assert is_label_value(sanitised)
    assert sanitize_label_value(sanitised) == sanitised


@given(st.from_regex(r"\A([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?\Z"))
def test_valid_label_values_are_kept_as_they_are(value: str) -> None:
    assert sanitize_label_value(value) == value


@given(st.text(max_size=200), st.text(max_size=200))
def test_different_values_get_different_label_values(first: str, second: str) -> None:
    assume(first != second)
    assert sanitize_label_value(first) != sanitize_label_value(second)


def test_sanitising_keeps_what_it_can_and_marks_the_change_with_a_hash() -> None:
    sanitised = sanitize_label_value("manual__2024-01-01T00:00:00+00:00")
    assert sanitised.startswith("manual__2024-01-01T00-00-00-00-00-")
    assert len(sanitised) == len("manual__2024-01-01T00-00-00-00-00-") + 10
    assert sanitize_label_value("") == ""
    assert len(sanitize_label_value("x" * 500)) == 63
    assert re.fullmatch(r"[0-9a-f]{10}", sanitize_label_value("数据"))


# --- identity labels and annotations ----------------------------------------------------------------


@given(airflow_ids, airflow_ids, airflow_ids, map_indices, st.integers(min_value=0, max_value=1000))
def test_identity_labels_are_valid_kubernetes_labels(
    dag_id: str, task_id: str, run_id: str, map_index: int, try_number: int
) -> None:
    labels = identity_labels(
        dag_id=dag_id, task_id=task_id, run_id=run_id, map_index=map_index, try_number=try_number
    )
    assert all(is_qualified_key(key) and LABEL_VALUE.match(value) for key, value in labels.items()), labels


def test_identity_labels_name_the_task_instance() -> None:
    labels = identity_labels(dag_id="etl", task_id="train", run_id="manual__1", map_index=4, try_number=2)
    assert labels == {
        LABEL_DAG_ID: "etl",
        LABEL_TASK_ID: "train",
        LABEL_RUN_ID: "manual__1",
        LABEL_MAP_INDEX: "4",
        LABEL_TRY_NUMBER: "2",
        LABEL_MANAGED_BY: MANAGED_BY_VALUE,
    }


def test_unmapped_tasks_carry_no_map_index_label_but_an_exact_annotation() -> None:
    identity: dict[str, Any] = {
        "dag_id": "d",
        "task_id": "t",
        "run_id": "r",
        "map_index": -1,
        "try_number": 1,
    }
    assert LABEL_MAP_INDEX not in identity_labels(**identity)
    assert identity_annotations(**identity)[ANNOTATION_MAP_INDEX] == "-1"


def test_identity_annotations_keep_the_exact_values() -> None:
    run_id = "manual__2024-01-01T00:00:00+00:00"
    annotations = identity_annotations(
        dag_id="Café.dag", task_id="g.t", run_id=run_id, map_index=7, try_number=3
    )
    assert annotations == {
        ANNOTATION_DAG_ID: "Café.dag",
        ANNOTATION_TASK_ID: "g.t",
        ANNOTATION_RUN_ID: run_id,
        ANNOTATION_MAP_INDEX: "7",
        ANNOTATION_TRY_NUMBER: "3",
    }


# --- stamping and matching --------------------------------------------------------------------------

IDENTITY: dict[str, Any] = {
    "dag_id": "nightly.etl",
    "task_id": "train",
    "run_id": "scheduled__2024-05-01T00:00:00+00:00",
    "map_index": 2,
}


def _user_manifest() -> dict[str, Any]:
    manifest = build_tfjob(name="user-name", image="registry.example/mnist:1.0")
    manifest["metadata"]["labels"] = {
        "team": "ml",
        LABEL_MANAGED_BY: "argocd",
        LABEL_DAG_ID: "forged",
    }
    manifest["metadata"]["annotations"] = {"example.com/ticket": "ML-1"}
    return manifest


def test_stamping_applies_name_namespace_and_identity_without_clobbering_user_labels() -> None:
    manifest = _user_manifest()
    before = copy.deepcopy(manifest)
    stamped = stamp_identity(manifest, name="job-abc", namespace="research", **IDENTITY, try_number=1)
    assert manifest == before  # the input is not modified
    metadata = stamped["metadata"]
    assert (metadata["name"], metadata["namespace"]) == ("job-abc", "research")
    assert metadata["labels"]["team"] == "ml"
    assert metadata["labels"][LABEL_MANAGED_BY] == "argocd"  # the user's own value wins
    assert metadata["labels"][LABEL_DAG_ID] == sanitize_label_value("nightly.etl")  # ours always wins
    assert metadata["annotations"]["example.com/ticket"] == "ML-1"
    assert metadata["annotations"][ANNOTATION_RUN_ID] == IDENTITY["run_id"]
    assert stamped["spec"] == before["spec"]


def test_stamping_an_unmapped_task_removes_a_stale_map_index_label() -> None:
    manifest = _user_manifest()
    manifest["metadata"]["labels"][LABEL_MAP_INDEX] = "5"
    stamped = stamp_identity(
        manifest, name="n", namespace="ns", **{**IDENTITY, "map_index": -1}, try_number=1
    )
    assert LABEL_MAP_INDEX not in stamped["metadata"]["labels"]


def test_stamping_adds_missing_metadata_and_refuses_malformed_metadata() -> None:
    stamped = stamp_identity({"kind": "TFJob"}, name="n", namespace="ns", **IDENTITY, try_number=1)
    assert stamped["metadata"]["labels"][LABEL_MANAGED_BY] == MANAGED_BY_VALUE
    with pytest.raises(ValueError, match=r"metadata\.labels must be a mapping"):
        stamp_identity({"metadata": {"labels": ["a"]}}, name="n", namespace="ns", **IDENTITY, try_number=1)


@given(airflow_ids, airflow_ids, airflow_ids, map_indices)
def test_a_stamped_built_manifest_always_validates(
    dag_id: str, task_id: str, run_id: str, map_index: int
) -> None:
    identity = {"dag_id": dag_id, "task_id": task_id, "run_id": run_id, "map_index": map_index}
    name = job_name_for(**identity)
    manifest = build_tfjob(
        name=name, image="registry.example/mnist:1.0", chief=1, worker=3, ps=2, evaluator=1
    )
    stamped = stamp_identity(manifest, name=name, namespace="default", **identity, try_number=1)
    assert validate_tfjob(stamped)["metadata"]["annotations"][ANNOTATION_DAG_ID] == dag_id
    assert matches_identity(stamped, **identity)


def test_matching_compares_exact_annotations_and_ignores_the_try_number() -> None:
    stamped = stamp_identity(_user_manifest(), name="n", namespace="ns", **IDENTITY, try_number=1)
    assert matches_identity(stamped, **IDENTITY)
    retried = stamp_identity(_user_manifest(), name="n", namespace="ns", **IDENTITY, try_number=4)
    assert matches_identity(retried, **IDENTITY)
    assert not matches_identity(stamped, **{**IDENTITY, "map_index": 3})
    assert not matches_identity(stamped, **{**IDENTITY, "run_id": "scheduled__2024-05-02T00:00:00+00:00"})
    assert not matches_identity(stamped, **{**IDENTITY, "dag_id": "nightly_etl"})  # same label, other dag


@pytest.mark.parametrize(
    "tfjob",
    [
        {},
        {"metadata": None},
        {"metadata": []},
        {"metadata": {"annotations": "x"}},
        {"metadata": {"labels": {}}},
    ],
)
def test_matching_odd_shapes_is_false_not_an_error(tfjob: dict[str, Any]) -> None:
    assert matches_identity(tfjob, **IDENTITY) is False


def test_kubernetes_name_predicates() -> None:
    assert is_qualified_key("example.com/name") and is_qualified_key("name")
    assert (
        not is_qualified_key("Example.com/name")
        and not is_qualified_key("a/b/c")
        and not is_qualified_key("")
    )
