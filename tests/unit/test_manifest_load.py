"""load_tfjob: every form a user (or a rendered Airflow template) can hand over becomes one fresh dict."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml

from tfjob_provider.manifest import ManifestError, Problem, load_tfjob

MANIFEST: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": "mnist"},
    "spec": {
        "tfReplicaSpecs": {
            "Worker": {
                "replicas": 2,
                "template": {
                    "spec": {"containers": [{"name": "tensorflow", "image": "registry.example/m:1"}]}
                },
            }
        }
    },
}


def _problem(source: Any) -> Problem:
    with pytest.raises(ManifestError) as caught:
        load_tfjob(source)
    (problem,) = caught.value.problems
    return problem


def test_a_mapping_is_copied_deeply() -> None:
    loaded = load_tfjob(MANIFEST)
    assert loaded == MANIFEST
    loaded["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 9
    assert MANIFEST["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 2


@pytest.mark.parametrize(
    "text",
    [
        yaml.safe_dump(MANIFEST),
        json.dumps(MANIFEST),
        json.dumps(MANIFEST, indent=2),
        "---\n" + yaml.safe_dump(MANIFEST) + "---\n",  # empty documents around the manifest are ignored
        yaml.safe_dump(MANIFEST, default_flow_style=True),  # YAML flow style also starts with "{"
    ],
    ids=["yaml", "json", "json-indented", "yaml-with-separators", "yaml-flow"],
)
def test_yaml_and_json_text_are_parsed(text: str) -> None:
    assert load_tfjob(text) == MANIFEST


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json", ".YAML"])
def test_files_are_read_from_paths_and_path_strings(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"job{suffix}"
    path.write_text(json.dumps(MANIFEST) if suffix == ".json" else yaml.safe_dump(MANIFEST), encoding="utf-8")
    assert load_tfjob(path) == MANIFEST
    assert load_tfjob(str(path)) == MANIFEST
    assert load_tfjob(f"  {path}\n".rstrip("\n")) == MANIFEST


def test_a_missing_file_is_reported_as_missing_not_parsed_as_yaml(tmp_path: Path) -> None:
    problem = _problem(str(tmp_path / "absent.yaml"))
    assert (
        problem.field == "document"
        and "does not exist" in problem.message
        and "Check the path" in problem.fix
    )


def test_a_file_without_a_manifest_suffix_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "job.txt"
    path.write_text(yaml.safe_dump(MANIFEST), encoding="utf-8")
    problem = _problem(path)
    assert "is not a manifest file" in problem.message and ".yaml, .yml or .json" in problem.fix


def test_a_json_file_is_parsed_as_strict_json(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(yaml.safe_dump(MANIFEST), encoding="utf-8")
    assert "JSON syntax error" in _problem(path).message


def test_a_file_that_is_not_utf8_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert "cannot be read" in _problem(path).message


def test_multiline_text_ending_in_a_suffix_is_text_not_a_path() -> None:
    text = yaml.safe_dump({**MANIFEST, "metadata": {"name": "mnist", "annotations": {"file": "x.yaml"}}})
    assert load_tfjob(text.rstrip("\n"))["metadata"]["annotations"] == {"file": "x.yaml"}


def test_yaml_anchors_and_merge_keys_are_not_mistaken_for_duplicate_keys() -> None:
    text = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: anchors}
spec:
  tfReplicaSpecs:
    Worker: &replica
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: "registry.example/m:1"}]}}
    PS:
      <<: *replica
      replicas: 1
"""
    loaded = load_tfjob(text)
    assert loaded["spec"]["tfReplicaSpecs"]["PS"]["replicas"] == 1
    assert (
        loaded["spec"]["tfReplicaSpecs"]["PS"]["template"]
        == loaded["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    )


def test_duplicate_keys_on_one_line_are_caught() -> None:
    problem = _problem("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: a, name: b}\n")
    assert "line 3" in problem.message and "duplicate key 'name'" in problem.message


@pytest.mark.parametrize("source", [42, None, ["a"], b"apiVersion: kubeflow.org/v1"])
def test_other_python_types_are_refused_with_a_problem(source: Any) -> None:
    problem = _problem(source)
    assert "A TFJob manifest was expected" in problem.message and "Pass a dict" in problem.fix


def test_a_scalar_document_is_not_a_mapping() -> None:
    assert "is a str, not a mapping" in _problem("just some words").message


def test_loading_does_not_validate_the_content() -> None:
    content = {**MANIFEST, "spec": {"tfReplicaSpecs": {"Worker": {"replicas": "two"}}}}
    assert load_tfjob(content)["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == "two"


def test_manifest_errors_are_value_errors_that_survive_pickling() -> None:
    with pytest.raises(ValueError) as caught:
        load_tfjob("a: [")
    assert isinstance(caught.value, ManifestError)
    copy = pickle.loads(pickle.dumps(caught.value))
    assert copy.problems == caught.value.problems and str(copy) == str(caught.value)


# --- limits on what may be walked at all ----------------------------------------------------------


def _shared_levels(levels: int) -> list[object]:
    """A list whose every level holds its child ten times: 10**levels paths over levels+1 objects."""
    value: list[object] = ["x"]
    for _ in range(levels):
        value = [value] * 10
    return value


def test_a_structure_that_shares_its_parts_is_measured_by_its_expanded_size_and_stops_early() -> None:
    from tfjob_provider.manifest import MAX_MANIFEST_BYTES, shape_problem

    problem = shape_problem(_shared_levels(40), "args")  # 10**40 strings once expanded
    assert problem is not None and problem.field == "args"
    assert f"over the 1 MiB ({MAX_MANIFEST_BYTES:,} bytes) limit" in problem.message


def test_without_the_size_check_only_nesting_and_self_containment_are_problems() -> None:
    from tfjob_provider.manifest import shape_problem

    assert shape_problem(["x" * 2_000_000], "args", check_size=False) is None
    assert shape_problem(_shared_levels(40), "args", check_size=False) is None  # stops after 1 MiB of walking
    cycle: dict[str, object] = {}
    cycle["again"] = [cycle]
    problem = shape_problem(cycle, "labels", check_size=False)
    assert problem is not None and problem.field == "labels.again[0]" and "contains itself" in problem.message


def test_the_same_object_twice_is_not_a_cycle() -> None:
    from tfjob_provider.manifest import shape_problem

    shared = {"name": "tensorflow"}
    assert shape_problem({"a": [shared, shared], "b": shared}) is None
