"""The operator runs with exactly the Role of docs/guides/rbac.md, and one verb less fails clearly, at once.

The sandbox enforces an RBAC file for the connection's token; the Role is read from the document
users copy (as the hook's RBAC test does), so the document cannot drift from what the operator needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tfjob_sandbox.launch.kubeconfig import connection_json
from tfjob_sandbox.testing import wait_for

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.cluster_queries import pods_of_job, tfjobs_of_dag
from tests.integration.hook_fixtures import create_namespace, write_kubeconfig
from tests.integration.test_hook_rbac import TOKEN, documented_role_rules, sandbox_with_rules, without_verb

NAMESPACE = "training"

DAG_SOURCE = """
from __future__ import annotations
import datetime
from pathlib import Path
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

def remember_error(context):
    Path({errors!r}).joinpath(context["ti"].task_id).write_text(str(context["exception"]))

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    common = dict(image="python:3.11", namespace="{namespace}", poll_interval=1, retries=2,
                  on_failure_callback=remember_error)
    TFJobOperator(task_id="sync_success", command=["python", "-c", "print('ok')"], chief=1, **common)
    TFJobOperator(task_id="deferred_success", command=["python", "-c", "print('ok')"], chief=1,
                  deferrable=True, **common)
    TFJobOperator(task_id="ps_failure", command=["python", "-c", "import time; time.sleep(30)"], chief=1,
                  ps={{"replicas": 1, "command": ["python", "-c", "print('bad'); raise SystemExit(3)"]}},
                  **common)
"""


def connect_as_limited_user(sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    create_namespace(sandbox, NAMESPACE)
    kubeconfig = write_kubeconfig(tmp_path / "limited", sandbox=sandbox, token=TOKEN, namespace=NAMESPACE)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", connection_json(kubeconfig, namespace=NAMESPACE))


def run(dags_folder: Path, tmp_path: Path, dag_id: str) -> Any:
    errors = tmp_path / "errors"
    errors.mkdir()
    source = DAG_SOURCE.format(dag_id=dag_id, namespace=NAMESPACE, errors=str(errors))
    return run_dag(load_dag(write_dag_file(dags_folder, dag_id, source), dag_id)), errors


def test_the_documented_role_is_all_the_operator_needs(
    dags_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sandbox_with_rules(tmp_path, documented_role_rules(), NAMESPACE) as sandbox:
        connect_as_limited_user(sandbox, tmp_path, monkeypatch)
        outcome, errors = run(dags_folder, tmp_path, "rbac_documented_role")
        states = {task: (outcome.task(task).state, outcome.task(task).try_number) for task in outcome.tasks}
        assert states == {
            "sync_success": ("success", 1),
            "deferred_success": ("success", 1),
            "ps_failure": ("failed", 1),
        }
        failure = xcom_value(outcome, "ps_failure", "tfjob_failure")
        assert "\n    | bad" in failure["report"]  # pods/log get
        assert "exited with code 3" in failure["report"]  # events list
        assert "Forbidden" not in (errors / "ps_failure").read_text()
        # delete_succeeded (the default) removed the successful jobs.  The failed one is deleted when
        # the provider saw the PS fail before the training operator did (its chief still running);
        # when the operator had already marked it Failed, it is kept for debugging and the operator's
        # cleanPodPolicy (Running) stops the chief.  Either way nothing keeps running.
        failed_job = xcom_value(outcome, "ps_failure", "tfjob_name")
        kept = [
            job
            for job in tfjobs_of_dag(sandbox, "rbac_documented_role", NAMESPACE)
            if not job["metadata"].get("deletionTimestamp")
        ]
        assert [job["metadata"]["name"] for job in kept] in ([], [failed_job])
        if kept:
            conditions = kept[0]["status"]["conditions"]
            assert {"type": "Failed", "status": "True"}.items() <= conditions[-1].items()
            wait_for(
                lambda: all(
                    pod.status.phase != "Running" or pod.metadata.deletion_timestamp
                    for pod in pods_of_job(sandbox, failed_job, NAMESPACE)
                ),
                what="the kept failed TFJob's replicas to stop",
            )


def test_a_missing_verb_fails_the_task_at_once_naming_the_rule_to_add(
    dags_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = without_verb(documented_role_rules(), "tfjobs", "create")
    with sandbox_with_rules(tmp_path, rules, NAMESPACE) as sandbox:
        connect_as_limited_user(sandbox, tmp_path, monkeypatch)
        outcome, errors = run(dags_folder, tmp_path, "rbac_without_create")
    assert {task: outcome.task(task).try_number for task in outcome.tasks} == {
        "sync_success": 1,
        "deferred_success": 1,
        "ps_failure": 1,
    }  # AirflowFailException: retries=2 are not burnt on a permission problem
    message = (errors / "sync_success").read_text()
    assert 'apiGroups: ["kubeflow.org"], resources: ["tfjobs"], verbs: ["create"]' in message
    assert f"namespace '{NAMESPACE}'" in message
