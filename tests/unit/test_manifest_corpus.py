"""The malformed-manifest corpus: every file in manifest_corpus/ must fail with exactly the problems it names.

Each ``*.yaml`` case lists its expected problems in ``# expect: field | message part | fix part``
header lines; ``*.json`` cases (JSON has no comments) keep the same lines in a sibling
``.expected`` file.  A case passes when the loader or validator raises :class:`ManifestError`
with exactly that many problems, each expectation matched by one problem (exact field, message
and fix containing the given parts), and ``str()`` of the error showing every field and fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tfjob_provider.manifest import ManifestError, Problem, load_tfjob, validate_tfjob

CORPUS = Path(__file__).parent / "manifest_corpus"
_EXPECT_PREFIX = "# expect:"


@dataclass(frozen=True)
class Expected:
    field: str
    message_part: str
    fix_part: str

    def matches(self, problem: Problem) -> bool:
        return (
            problem.field == self.field
            and self.message_part in problem.message
            and self.fix_part in problem.fix
        )


def _parse_expectation(line: str) -> Expected:
    field, message_part, fix_part = (part.strip() for part in line.split(" | "))
    return Expected(field, message_part, fix_part)


def expectations_for(case: Path) -> list[Expected]:
    if case.suffix == ".json":
        lines = case.with_name(f"{case.name}.expected").read_text(encoding="utf-8").splitlines()
    else:
        header = case.read_text(encoding="utf-8").splitlines()
        lines = [line[len(_EXPECT_PREFIX) :] for line in header if line.startswith(_EXPECT_PREFIX)]
    return [_parse_expectation(line) for line in lines if line.strip()]


CASES = sorted([*CORPUS.glob("*.yaml"), *CORPUS.glob("*.json")])


def load_and_validate(source: Path | str) -> dict[str, object]:
    return validate_tfjob(load_tfjob(source))


def test_the_corpus_holds_at_least_forty_cases_each_with_expectations() -> None:
    assert len(CASES) >= 40
    assert all(expectations_for(case) for case in CASES), [
        case.name for case in CASES if not expectations_for(case)
    ]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_malformed_manifest_reports_exactly_the_expected_problems(case: Path) -> None:
    expected = expectations_for(case)
    with pytest.raises(ManifestError) as caught:
        load_and_validate(case)
    problems = caught.value.problems
    report = str(caught.value)
    assert len(problems) == len(expected), report
    for expectation in expected:
        assert any(expectation.matches(problem) for problem in problems), f"{expectation} not in:\n{report}"
    lines = report.splitlines()
    assert len(lines) == len(problems) + 1
    for problem, line in zip(problems, lines[1:], strict=True):
        assert problem.field in line and problem.message in line and problem.fix in line


YAML_TEXT_CASES = [case for case in CASES if case.suffix == ".yaml"]


@pytest.mark.parametrize("case", YAML_TEXT_CASES, ids=[case.name for case in YAML_TEXT_CASES])
def test_the_same_manifest_given_as_text_reports_the_same_fields(case: Path) -> None:
    with pytest.raises(ManifestError) as from_file:
        load_and_validate(case)
    with pytest.raises(ManifestError) as from_text:
        load_and_validate(case.read_text(encoding="utf-8"))
    assert [p.field for p in from_text.value.problems] == [p.field for p in from_file.value.problems]


#: A report never grows with its input: "a few kilobytes" at most, whatever was given.
MAX_REPORT_LENGTH = 5000


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_every_report_of_the_corpus_is_short(case: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        load_and_validate(case)
    assert len(str(caught.value)) <= MAX_REPORT_LENGTH


# --- generated cases: inputs too large, too deep or too binary to keep as files -------------------

_WORKER = "spec.tfReplicaSpecs.Worker"
_CONTAINER = f"{_WORKER}.template.spec.containers[0]"


def _valid_text() -> str:
    return """apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              image: registry.example/mnist:1.0
"""


def _valid_dict() -> dict[str, Any]:
    loaded = load_tfjob(_valid_text())
    validate_tfjob(loaded)  # the cases below break exactly one thing of a valid manifest
    return loaded


def _container(manifest: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"][
        "containers"
    ][0]
    return container


def _nested(levels: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    current = top
    for _ in range(levels - 1):
        current["a"] = {}
        current = current["a"]
    return top


def _with(**container_fields: Any) -> dict[str, Any]:
    manifest = _valid_dict()
    _container(manifest).update(container_fields)
    return manifest


def _self_containing() -> dict[str, Any]:
    manifest = _valid_dict()
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = manifest
    return manifest


def _deep_in_spec() -> dict[str, Any]:
    manifest = _valid_dict()
    manifest["spec"]["extra"] = _nested(5000)
    return manifest


_ENV_100K_TEXT = "              env:\n" + "".join(
    f"                - {{name: V{i}, value: x}}\n" for i in range(100_000)
)
_LONG_STRING_ALIASED = (
    _valid_text()
    + f'              args: [&s "{"x" * 400_000}", *s, *s, *s]\n'  # 400 KB of text, 1.6 MB once expanded
)

GENERATED: dict[str, tuple[Any, list[Expected]]] = {
    "yaml-nested-5000-levels": (
        _valid_text() + "              args: " + "[" * 5000 + "]" * 5000 + "\n",
        [
            Expected(
                "document", "line 14, column 77: mappings and lists nest deeper than 64 levels", "Flatten"
            )
        ],
    ),
    "json-nested-5000-levels": (
        '{"a":' * 5000 + "1" + "}" * 5000,
        [Expected("document", "deeper than 64", "Flatten")],
    ),
    "json-nested-100-levels": (
        '{"a":' * 100 + "1" + "}" * 100,
        [Expected("a" + ".a" * 63, "deeper than 64", "Flatten")],
    ),
    "dict-nested-5000-levels": (
        _deep_in_spec(),
        [Expected("spec.extra" + ".a" * 62, "deeper than 64", "Flatten")],
    ),
    "dict-containing-itself": (
        _self_containing(),
        [Expected(f"{_WORKER}.template.metadata", "contains itself", "fresh dicts")],
    ),
    "yaml-nul-byte": (
        _valid_text().replace("name: mnist", "name: mn\x00ist"),
        [Expected("document", "contains the character #x0000 at position 60", "Remove it")],
    ),
    "dict-name-with-nul": (
        dict(_valid_dict(), metadata={"name": "mn\x00ist"}),
        [Expected("metadata.name", "contains a NUL character", "Remove the NUL character")],
    ),
    "dict-env-value-with-nul": (
        _with(env=[{"name": "A", "value": "x\x00y"}]),
        [Expected(f"{_CONTAINER}.env[0].value", "contains a NUL character", "Remove the NUL character")],
    ),
    "dict-key-with-nul": (
        _with(**{"ima\x00ge": "x"}),
        [Expected(_CONTAINER, "contains a NUL character", "Remove the NUL character")],
    ),
    "text-over-1-mib": (
        _valid_text() + "#" * (1024 * 1024) + "\n",
        [Expected("document", "is 1.0 MiB, over the 1 MiB (1,048,576 bytes) limit", "Make it smaller")],
    ),
    "yaml-env-100000-entries": (
        _valid_text() + _ENV_100K_TEXT,
        [Expected("document", "is 4.1 MiB, over the 1 MiB (1,048,576 bytes) limit", "ConfigMap")],
    ),
    "dict-env-100000-entries": (
        _with(env=[{"name": f"V{i}", "value": "x"} for i in range(100_000)]),
        [Expected("document", "over the 1 MiB (1,048,576 bytes) limit", "ConfigMap")],
    ),
    "yaml-alias-of-a-long-string": (
        _LONG_STRING_ALIASED,
        [
            Expected(
                "document",
                "YAML aliases may repeat at most 1 MiB (1,048,576 bytes) of text",
                "Write the repeated",
            )
        ],
    ),
    "yaml-integer-of-5000-digits": (
        _valid_text().replace("replicas: 1", "replicas: " + "9" * 5000),
        [Expected("document", "line 8, column 17: an integer of 5,000 digits", "fits the field")],
    ),
    "json-integer-of-5000-digits": (
        '{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": ' + "9" * 5000 + "}",
        [Expected("document", "an integer of 5,000 digits", "fits the field")],
    ),
    "dict-integer-of-5000-digits": (
        dict(
            _valid_dict(),
            spec={
                "tfReplicaSpecs": {
                    "Worker": dict(_valid_dict()["spec"]["tfReplicaSpecs"]["Worker"], replicas=10**5000)
                }
            },
        ),
        [
            Expected(
                f"{_WORKER}.replicas", "is an integer of about 5001 digits; it must be between 0", "from 0 to"
            )
        ],
    ),
    "dict-image-with-control-character": (
        _with(image="registry.example/mnist:1.0\x1b[31m"),
        [
            Expected(
                f"{_CONTAINER}.image", "is not an image reference", "without spaces or control characters"
            )
        ],
    ),
    "dict-label-value-of-1-mb": (
        dict(_valid_dict(), metadata={"name": "mnist", "labels": {"team": "x" * 1_000_000}}),
        [Expected("metadata.labels.team", "is not a valid label value", "at most 63")],
    ),
    "dict-field-name-of-100-kb": (
        dict(_valid_dict(), **{"k" * 100_000: 1}),
        [
            Expected(
                '["' + "k" * 60 + '… (99940 more characters)"]',
                "unknown field",
                "Remove it",
            )
        ],
    ),
}


def _generated_error(source: Any) -> ManifestError:
    with pytest.raises(ManifestError) as caught:
        load_and_validate(source)
    return caught.value


@pytest.mark.parametrize("name", list(GENERATED))
def test_generated_hostile_input_is_refused_with_a_short_report_naming_the_field(name: str) -> None:
    source, expected = GENERATED[name]
    error = _generated_error(source)
    report = str(error)
    assert len(error.problems) == len(expected), report
    for expectation in expected:
        assert any(expectation.matches(problem) for problem in error.problems), (
            f"{expectation} not in:\n{report}"
        )
    assert len(report) <= MAX_REPORT_LENGTH


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text(_valid_text() + _ENV_100K_TEXT)
    error = _generated_error(big)
    (problem,) = error.problems
    assert problem.field == "document" and "is 4.1 MiB, over the 1 MiB" in problem.message


def test_a_hundred_thousand_problems_are_counted_not_all_printed() -> None:
    error = _generated_error(_with(command=list(range(100_000))))
    assert len(error.problems) == 100_000
    report = str(error)
    assert len(report) <= MAX_REPORT_LENGTH
    assert report.splitlines()[0] == "TFJob manifest is invalid (100000 problems):"
    assert report.splitlines()[-1].startswith("  … and ") and "more problems (fix these first)." in report
    assert f"{_CONTAINER}.command[0]: must be a string, not 0 (a number)." in report


def test_the_same_limits_guard_validate_tfjob_called_directly() -> None:
    with pytest.raises(ManifestError) as caught:
        validate_tfjob(_deep_in_spec())
    assert "deeper than 64 levels" in str(caught.value)


def test_anchors_and_merge_keys_within_the_budget_are_accepted() -> None:
    text = """apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    Chief:
      replicas: 1
      template: &pod
        spec:
          containers:
            - &trainer
              name: tensorflow
              image: registry.example/mnist:1.0
              env: [{name: EPOCHS, value: "10"}]
    Worker:
      replicas: 4
      template: *pod
    PS:
      template:
        spec:
          containers:
            - <<: *trainer
              image: registry.example/mnist-ps:1.0
"""
    manifest = load_and_validate(text)
    replicas = manifest["spec"]["tfReplicaSpecs"]  # type: ignore[index]
    assert replicas["Worker"]["template"] == replicas["Chief"]["template"]
    (ps_container,) = replicas["PS"]["template"]["spec"]["containers"]
    assert (
        ps_container["image"] == "registry.example/mnist-ps:1.0" and ps_container["env"][0]["value"] == "10"
    )
