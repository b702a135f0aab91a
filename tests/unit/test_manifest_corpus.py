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
