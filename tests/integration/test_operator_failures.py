"""Failures of every replica type under every restart policy end the task as the rules say.

One DAG holds one task per (failing replica, restart policy) case; each task's TFJob has a Chief
that would train for half a minute, so the failing replica decides.  A permanent failure must
fail the task on its first try although it may retry (AirflowFailException); a retryable one
must use its retries.  The culprit-first report (also in XCom ``tfjob_failure``) must name the
failing replica and show what it printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value

SLEEP = ["python", "-c", "import time; time.sleep(30)"]

#: (task id, replica parameter, restart policy, exit code, expected try number with retries=2)
CASES = [
    ("chief_never", "chief", "Never", 3, 1),
    ("chief_exitcode", "chief", "ExitCode", 3, 1),
    ("chief_onfailure", "chief", "OnFailure", 3, 1),
    ("ps_never", "ps", "Never", 3, 1),
    ("ps_exitcode", "ps", "ExitCode", 3, 1),
    ("ps_onfailure", "ps", "OnFailure", 3, 1),
    ("ps_always", "ps", "Always", 3, 1),
    ("evaluator_never", "evaluator", "Never", 2, 1),
    ("evaluator_exitcode", "evaluator", "ExitCode", 2, 1),
    ("evaluator_onfailure", "evaluator", "OnFailure", 2, 1),
    ("evaluator_always", "evaluator", "Always", 2, 1),
    ("worker_never", "worker", "Never", 1, 1),
    ("worker_exitcode", "worker", "ExitCode", 1, 1),
    ("worker_onfailure", "worker", "OnFailure", 1, 1),
    ("worker_always", "worker", "Always", 1, 1),
    # A signal is retryable: the task uses its retries (and fails again, the command never changes).
    ("ps_never_sigkill", "ps", "Never", 137, 3),
]

DAG_SOURCE = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

SLEEP = {sleep!r}
CASES = {cases!r}

with DAG("replica_failures", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    for task_id, failing, policy, code, _ in CASES:
        replicas = {{"chief": 1, "worker": 1, "ps": 1, "evaluator": 1}}
        typed = {{name: {{"replicas": count}} for name, count in replicas.items()}}
        typed[failing] = {{
            "replicas": 1,
            "restart_policy": policy,
            "command": ["python", "-c", f"import sys; print('{{task_id}} fails'); sys.exit({{code}})"],
        }}
        TFJobOperator(
            task_id=task_id,
            retries=2,
            image="python:3.11",
            command=SLEEP,
            backoff_limit=1,
            poll_interval=1,
            **typed,
        )
"""


def test_each_replica_and_restart_policy_fails_the_task_as_classified(
    cluster: Any, dags_folder: Path
) -> None:
    path = write_dag_file(dags_folder, "replica_failures", DAG_SOURCE.format(sleep=SLEEP, cases=CASES))
    outcome = run_dag(load_dag(path, "replica_failures"))
    observed = {
        task_id: (outcome.task(task_id).state, outcome.task(task_id).try_number) for task_id, *_ in CASES
    }
    expected = {task_id: ("failed", tries) for task_id, _, _, _, tries in CASES}
    assert observed == expected
    for task_id, failing, policy, code, _ in CASES:
        failure = xcom_value(outcome, task_id, "tfjob_failure")
        replica = {"chief": "Chief", "ps": "PS", "evaluator": "Evaluator", "worker": "Worker"}[failing]
        report = failure["report"]
        assert failure["retryable"] is (code >= 128), failure
        if policy in ("Never", "ExitCode"):
            # Culprit first, with what the program printed before it died.
            assert [culprit.rsplit("-", 2)[-2:] for culprit in failure["culprits"]] == [[failing, "0"]]
            assert report.splitlines()[2].startswith(f"Culprit 1: {replica} 0 — pod "), report
            assert f"\n    | {task_id} fails" in report, report
        else:
            # Restarted in place until backoffLimit; the operator removed the pods, events remain.
            assert failure["reason"] == "BackoffLimitExceeded", failure
            assert f"-{failing}-0 container tensorflow exitCode: {code}" in report, report
