"""The project's TFJob CRD against the training operator's own (the reference), where that file is here.

Two checks, both skipped with a reason naming ``$TFJOB_PROVIDER_CRD`` when the reference is absent
(``tests/reference_crd.py`` says where it is looked for):

* **schema**: both CRDs declare the same field paths, each with the same type, format,
  int-or-string and quantity pattern, default and required fields — apart from
  :data:`DELIBERATE`, the constraints the project adds (enums, non-negative bounds) and the
  canonical ``tfReplicaSpecs`` keys where the reference takes any key;
* **behaviour**: on every manifest of the corpus (``manifest_corpus``, ``manifest_examples``)
  and every manifest the builder makes in ``test_manifest_crd``, the sandbox's own schema engine
  (pruning as under ``fieldValidation=Strict``, defaults, validation) refuses the same fields
  with either CRD, except that the project's CRD may also refuse a manifest at a
  :data:`DELIBERATE` field or a non-canonical replica key — and such a manifest the provider's
  validator refuses too, or (replica keys like ``ps``) rewrites before submitting it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from tfjob_sandbox.admission.structural_schema import StructuralSchema
from tfjob_sandbox.admission.tfjob_crd import tfjob_crd

from tests.reference_crd import REFERENCE_CRD, needs_reference_crd
from tests.unit.test_manifest_crd import BUILD_PARAMETERS, CORPUS, EXAMPLES
from tfjob_provider.manifest import ManifestError, build_tfjob, validate_tfjob

pytestmark = needs_reference_crd

REPLICA_TYPES = ("Chief", "Evaluator", "Master", "PS", "Worker")
_ANY_REPLICA = re.compile(r"^spec\.tfReplicaSpecs\.[^.\[]+")

#: The project's additions, by schema path (``*`` = any replica type): keyword -> value.
DELIBERATE: dict[str, dict[str, Any]] = {
    "spec.tfReplicaSpecs.*.replicas": {"minimum": 0},
    "spec.tfReplicaSpecs.*.restartPolicy": {"enum": ["Always", "OnFailure", "Never", "ExitCode"]},
    "spec.runPolicy.activeDeadlineSeconds": {"minimum": 0},
    "spec.runPolicy.backoffLimit": {"minimum": 0},
    "spec.runPolicy.ttlSecondsAfterFinished": {"minimum": 0},
    "spec.runPolicy.cleanPodPolicy": {"enum": ["All", "Running", "None"]},
    "spec.successPolicy": {"enum": ["", "AllWorkers"]},
}
_COMPARED = (
    "type",
    "format",
    "x-kubernetes-int-or-string",
    "pattern",
    "default",
    "nullable",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
)


def _version_schema(crd: Mapping[str, Any]) -> dict[str, Any]:
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


@cache
def _reference_text() -> str:
    assert REFERENCE_CRD is not None
    return REFERENCE_CRD.read_text(encoding="utf-8")


def _reference_crd() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.load(_reference_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return crd


@cache
def _engines() -> tuple[StructuralSchema, StructuralSchema]:
    """The sandbox's schema engine over the project's CRD and over the reference."""
    return StructuralSchema(_version_schema(tfjob_crd())), StructuralSchema(_version_schema(_reference_crd()))


def _nodes(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every sub-schema by path; a replica type key and a map's value both read ``*``."""
    yield path, schema
    for name, child in (schema.get("properties") or {}).items():
        key = "*" if path == "spec.tfReplicaSpecs" else name
        yield from _nodes(child, f"{path}.{key}" if path else key)
    if isinstance(schema.get("items"), Mapping):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _nodes(schema["additionalProperties"], f"{path}.*")


def _flat(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    flat: dict[str, dict[str, Any]] = {}
    for path, node in _nodes(schema):
        facts = {key: node[key] for key in _COMPARED if key in node}
        facts["required"] = sorted(node.get("required") or [])
        if node.get("x-kubernetes-list-type") == "set":
            facts["set"] = True
        flat.setdefault(path, facts)
    return flat


def test_both_crds_declare_the_same_fields_alike_apart_from_the_deliberate_additions() -> None:
    ours, reference = _flat(_version_schema(tfjob_crd())), _flat(_version_schema(_reference_crd()))
    assert sorted(set(reference) - set(ours)) == [], "fields the project's CRD lacks"
    assert sorted(set(ours) - set(reference)) == [], "fields only the project's CRD has"
    differences = {
        path: {
            key: ours[path].get(key)
            for key in set(ours[path]) | set(reference[path])
            if ours[path].get(key) != reference[path].get(key)
        }
        for path in ours
        if ours[path] != reference[path]
    }
    assert differences == DELIBERATE
    assert len(ours) > 1000  # the whole pod template was compared, not only the TFJob's own fields


def test_only_the_projects_crd_restricts_the_replica_type_keys() -> None:
    ours = _version_schema(tfjob_crd())["properties"]["spec"]["properties"]["tfReplicaSpecs"]
    reference = _version_schema(_reference_crd())["properties"]["spec"]["properties"]["tfReplicaSpecs"]
    assert sorted(ours["properties"]) == list(REPLICA_TYPES) and "additionalProperties" not in ours
    assert "properties" not in reference and isinstance(reference["additionalProperties"], Mapping)


# -- the same manifests accepted and refused ----------------------------------------------------


def _refusals(schema: StructuralSchema, manifest: dict[str, Any]) -> set[str]:
    """The fields the API server would refuse under ``fieldValidation=Strict``, as ``reason field``."""
    pruned, unknown = schema.prune(manifest)
    schema.apply_defaults(pruned)
    refusals = {f"unknown {path}" for path in unknown}
    refusals |= {f"{cause['reason']} {cause['field']}" for cause in schema.validate(pruned)}
    return refusals


def _is_deliberate(refusal: str) -> bool:
    reason, _, field = refusal.partition(" ")
    if reason == "unknown" and _ANY_REPLICA.fullmatch(field):
        return field.rsplit(".", 1)[-1] not in REPLICA_TYPES
    generic = _ANY_REPLICA.sub("spec.tfReplicaSpecs.*", field)
    return generic in DELIBERATE


def _under_other_replica_key(refusal: str) -> bool:
    match = _ANY_REPLICA.search(refusal.partition(" ")[2])
    return match is not None and match[0].rsplit(".", 1)[-1] not in REPLICA_TYPES


def _documents() -> dict[str, dict[str, Any]]:
    documents: dict[str, dict[str, Any]] = {}
    for path in [*CORPUS, *EXAMPLES]:
        text = path.read_text(encoding="utf-8")
        try:
            if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text)):
                continue  # alias bombs: the loader refuses aliases, and walking one would never end
            loaded = yaml.safe_load(text)
        except yaml.YAMLError:
            continue  # the loader's own cases: never reach an API server
        if isinstance(loaded, dict):
            documents[f"{path.parent.name}/{path.name}"] = loaded
    for name, parameters in BUILD_PARAMETERS.items():
        documents[f"built/{name}"] = build_tfjob(**parameters)
    return documents


DOCUMENTS = _documents()


def _provider_refuses_or_rewrites(manifest: dict[str, Any]) -> bool:
    try:
        normalised = validate_tfjob(manifest)
    except ManifestError:
        return True
    return normalised != manifest


def test_the_cross_check_covers_the_corpus() -> None:
    assert len(DOCUMENTS) >= 60
    assert sum(name.startswith("built/") for name in DOCUMENTS) == len(BUILD_PARAMETERS)


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_both_crds_refuse_the_same_manifests(name: str) -> None:
    ours, reference = _engines()
    manifest = DOCUMENTS[name]
    by_ours, by_reference = _refusals(ours, manifest), _refusals(reference, manifest)
    # Under a key the project's CRD does not know, the reference goes on to check the replica's
    # contents; the project's stops at the key (it is pruned and reported as unknown).
    comparable = {refusal for refusal in by_reference if not _under_other_replica_key(refusal)}
    assert comparable <= by_ours, "refused by the reference only"
    only_ours = by_ours - by_reference
    assert all(_is_deliberate(refusal) for refusal in only_ours), only_ours
    if only_ours:
        assert _provider_refuses_or_rewrites(manifest), only_ours


def test_the_deliberate_differences_do_show_on_the_corpus() -> None:
    """The corpus has manifests only the project's CRD refuses, so the check above is not vacuous."""
    ours, reference = _engines()
    differing = [
        name
        for name, manifest in DOCUMENTS.items()
        if _refusals(ours, manifest) != _refusals(reference, manifest)
    ]
    refused_by_both = [
        name
        for name, manifest in DOCUMENTS.items()
        if _refusals(ours, manifest) and _refusals(reference, manifest)
    ]
    assert "manifest_corpus/restartpolicy-invalid.yaml" in differing
    assert "manifest_examples/lowercase-replica-keys.yaml" in differing
    assert len(refused_by_both) >= 5
    assert all(not name.startswith("built/") for name in differing)


def test_the_reference_is_a_tfjob_crd() -> None:
    crd = _reference_crd()
    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"]) == ("kubeflow.org", "TFJob")
    assert Path(str(REFERENCE_CRD)).name.endswith(".yaml")
