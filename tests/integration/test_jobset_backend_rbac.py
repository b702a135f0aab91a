"""backend="jobset" with exactly the JobSet Role of docs/guides/rbac.md, and one verb less.

The sandbox enforces an RBAC file for the connection's token; the Role is read from the page users
copy, so the page cannot drift from what the JobSet backend needs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file
from tests.integration.test_hook_rbac import RBAC_DOC, sandbox_with_rules, without_verb
from tests.integration.test_operator_rbac import NAMESPACE, connect_as_limited_user

DAG_SOURCE = """
from __future__ import annotations
import datetime
from pathlib import Path
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

def remember_error(context):
    Path({errors!r}).joinpath(context["ti"].task_id).write_text(str(context["exception"]))

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    common = dict(backend="jobset", image="python:3.11", namespace="{namespace}", retries=2,
                  on_failure_callback=remember_error, command=["python", "-c", "print('ok')"], chief=1)
    TFJobOperator(task_id="sync_success", **common)
    TFJobOperator(task_id="deferred_success", deferrable=True, **common)
"""


def jobset_role_rules() -> list[dict[str, Any]]:
    """The rules of the JobSet Role (``tfjob-provider-jobset``) in docs/guides/rbac.md."""
    for block in re.findall(r"```yaml\n(.*?)```", RBAC_DOC.read_text(), flags=re.S):
        for document in yaml.safe_load_all(block):
            if (
                isinstance(document, dict)
                and document.get("metadata", {}).get("name") == "tfjob-provider-jobset"
            ):
                return list(document["rules"])
    raise AssertionError("docs/guides/rbac.md has no JobSet Role")


def run(dags_folder: Path, tmp_path: Path, dag_id: str) -> tuple[Any, Path]:
    errors = tmp_path / "errors"
    errors.mkdir()
    source = DAG_SOURCE.format(dag_id=dag_id, namespace=NAMESPACE, errors=str(errors))
    return run_dag(load_dag(write_dag_file(dags_folder, dag_id, source), dag_id)), errors


def test_the_documented_jobset_role_is_all_the_backend_needs(
    dags_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sandbox_with_rules(tmp_path, jobset_role_rules(), NAMESPACE) as sandbox:
        connect_as_limited_user(sandbox, tmp_path, monkeypatch)
        outcome, errors = run(dags_folder, tmp_path, "jobset_rbac_documented")
    states = {task: (outcome.task(task).state, outcome.task(task).try_number) for task in outcome.tasks}
    assert states == {"sync_success": ("success", 1), "deferred_success": ("success", 1)}, [
        path.read_text() for path in errors.iterdir()
    ]


def test_a_missing_jobset_verb_fails_the_task_at_once_naming_the_rule(
    dags_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = without_verb(jobset_role_rules(), "jobsets", "create")
    with sandbox_with_rules(tmp_path, rules, NAMESPACE) as sandbox:
        connect_as_limited_user(sandbox, tmp_path, monkeypatch)
        outcome, errors = run(dags_folder, tmp_path, "jobset_rbac_without_create")
    assert {task: outcome.task(task).try_number for task in outcome.tasks} == {
        "sync_success": 1,
        "deferred_success": 1,
    }  # AirflowFailException: retries=2 are not burnt on a permission problem
    message = (errors / "sync_success").read_text()
    assert 'apiGroups: ["jobset.x-k8s.io"], resources: ["jobsets"], verbs: ["create"]' in message
    assert f"namespace '{NAMESPACE}'" in message
