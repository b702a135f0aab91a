"""The README is checked by running it: its examples, tables and messages must match the code.

A README drifts the moment nobody runs it.  These tests hold it to the code: every Python example
is a DAG file that Airflow imports without errors; the restart-policy table is recomputed with
the verdict engine cell by cell; every parameter of the operator, sensor and trigger appears in
its table; the RBAC Role is the one the RBAC integration test proves sufficient; and the
troubleshooting messages are the ones the code raises.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from tests.dagbag import parse_dag_folder
from tests.unit.factories import make_pod, make_tfjob
from tfjob_provider.policy import VerdictState, decide

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _fenced_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def _section(text: str, heading: str) -> str:
    """The text under a Markdown heading, up to the next heading of the same or a higher level."""
    lines = text.splitlines()
    in_fence = False
    start: int | None = None
    level = 0
    for number, line in enumerate(lines):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        heading_match = None if in_fence else re.match(r"^(#+) (.*)$", line)
        if heading_match is None:
            continue
        if start is None and heading_match.group(2).strip() == heading:
            start, level = number + 1, len(heading_match.group(1))
        elif start is not None and len(heading_match.group(1)) <= level:
            return "\n".join(lines[start:number])
    assert start is not None, f"README has no section {heading!r}"
    return "\n".join(lines[start:])


def _table_rows(section: str) -> list[list[str]]:
    rows = []
    for line in section.splitlines():
        if line.startswith("|") and not set(line) <= set("|-: "):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[1:]  # without the header


# --- Python examples --------------------------------------------------------------------------


DAG_EXAMPLES = [block for block in _fenced_blocks(README, "python") if "with DAG(" in block]


def test_readme_has_dag_examples() -> None:
    assert len(DAG_EXAMPLES) >= 3


@pytest.mark.parametrize("index", range(len(DAG_EXAMPLES)))
def test_readme_dag_example_imports_cleanly(index: int, tmp_path: Path) -> None:
    (tmp_path / f"readme_example_{index}.py").write_text(DAG_EXAMPLES[index])
    bag = parse_dag_folder(tmp_path, bundle_name="readme")
    assert bag.import_errors == {}
    assert len(bag.dags) == 1
    (dag,) = bag.dags.values()
    assert {type(task).__name__ for task in dag.tasks} <= {"TFJobOperator", "TFJobSensor"}
    for task in dag.tasks:
        if getattr(task, "image", None) is not None:  # typed parameters: they must build a valid TFJob
            _build_like_the_operator(task)


def _build_like_the_operator(task: object) -> None:
    from tfjob_provider.manifest import build_tfjob, validate_tfjob
    from tfjob_provider.operators.tfjob import BUILDER_FIELDS

    typed = {field: getattr(task, field) for field in BUILDER_FIELDS}
    typed["resources"] = typed.pop("container_resources")
    manifest = build_tfjob(name="readme-example", namespace="training", **typed)
    assert validate_tfjob(manifest)["spec"]["tfReplicaSpecs"]


def test_readme_taskflow_example_parses_into_a_tfjob_task(tmp_path: Path) -> None:
    (block,) = [b for b in _fenced_blocks(_section(README, "TaskFlow"), "python") if "@task.tfjob" in b]
    (tmp_path / "readme_taskflow.py").write_text(block)
    bag = parse_dag_folder(tmp_path, bundle_name="readme")
    assert bag.import_errors == {}
    (dag,) = bag.dags.values()
    train = dag.get_task("train")
    assert type(train).__name__ == "_TFJobDecoratedOperator"
    assert (train.chief, train.worker, train.ps, train.restart_policy, train.retries) == (
        1,
        2,
        1,
        "ExitCode",
        2,
    )
    assert dag.get_task("show").upstream_task_ids == {"train"}


def test_readme_rules_example_is_valid() -> None:
    blocks = _fenced_blocks(README, "python")
    (block,) = [b for b in blocks if b.lstrip().startswith("from tfjob_provider.policy")]
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)  # a bad field would raise here


# --- the restart-policy x exit-code table, recomputed --------------------------------------------


def _exit_codes(header: str) -> list[int | None]:
    if header == "no exit code":
        return [None]
    assert header.startswith("exit "), header
    return [int(code) for code in re.findall(r"\d+", header)]


def _expected(cell: str) -> tuple[VerdictState, bool | None]:
    if cell == "Restarting":
        return VerdictState.RESTARTING, None
    state, _, retry = cell.partition(", ")
    assert state == "Failed", cell
    return VerdictState.FAILED, retry == "retryable"


def _restart_table() -> tuple[list[str], list[list[str]]]:
    section = _section(README, "Restart policy \N{MULTIPLICATION SIGN} exit code")
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip().strip("|").split("|")]
    return header, _table_rows(section)


def test_restart_table_matches_the_verdict_engine() -> None:
    header, rows = _restart_table()
    assert [row[0] for row in rows] == ["`Never`", "`OnFailure`", "`Always`", "`ExitCode`"]
    checked = 0
    for row in rows:
        policy = row[0].strip("`")
        for column, cell in zip(header[1:], row[1:], strict=True):
            expected_state, expected_retryable = _expected(cell)
            for code in _exit_codes(column):
                tfjob = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy=policy)
                pods = [
                    make_pod("Chief", 0, phase="Running"),
                    make_pod("Worker", 0, phase="Running", restart_policy=policy),
                    make_pod("Worker", 1, phase="Failed", exit_code=code, restart_policy=policy),
                ]
                verdict = decide(tfjob, pods)
                assert verdict.state == expected_state, (policy, code, verdict)
                if expected_retryable is not None:
                    assert verdict.retryable == expected_retryable, (policy, code, verdict)
                checked += 1
    assert checked == 4 * 10


# --- parameters --------------------------------------------------------------------------------


def _documented_names(heading: str) -> set[str]:
    names: set[str] = set()
    for row in _table_rows(_section(README, heading)):
        names.update(re.findall(r"`([a-z_]+)`", row[0]))
    return names


@pytest.mark.parametrize(
    ("heading", "import_path"),
    [
        ("TFJobOperator", "tfjob_provider.operators.tfjob:TFJobOperator"),
        ("TFJobSensor", "tfjob_provider.sensors.tfjob:TFJobSensor"),
        ("TFJobTrigger", "tfjob_provider.triggers.tfjob:TFJobTrigger"),
    ],
)
def test_every_parameter_is_documented(heading: str, import_path: str) -> None:
    import importlib

    module_name, class_name = import_path.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    parameters = {
        name
        for name, parameter in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD
    }
    assert parameters - _documented_names(heading) == set()


def test_documented_operator_parameters_exist() -> None:
    from tfjob_provider.operators.tfjob import TFJobOperator

    parameters = set(inspect.signature(TFJobOperator.__init__).parameters)
    assert _documented_names("TFJobOperator") - parameters == set()


# --- RBAC and messages -------------------------------------------------------------------------


def _role(text: str) -> str:
    (block,) = [b for b in _fenced_blocks(text, "yaml") if "kind: Role\n" in b]
    return block.split("\n---\n")[0].strip()


def test_readme_role_is_the_tested_role() -> None:
    # tests/integration/test_operator_rbac.py runs the operator with the Role of docs/rbac.md.
    assert _role(README) == _role((ROOT / "docs" / "rbac.md").read_text())


def test_troubleshooting_quotes_the_real_messages() -> None:
    from tfjob_provider.kube.errors import TFJOB_NOT_SERVED_MESSAGE
    from tfjob_provider.policy import NOT_RECONCILED_MESSAGE

    assert f"`{TFJOB_NOT_SERVED_MESSAGE}`" in README
    assert f"StartupTimeout: {NOT_RECONCILED_MESSAGE}" in README
