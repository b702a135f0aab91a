"""Deadlines: ``timeout`` and ``execution_timeout`` end the task as a timeout and delete the TFJob,
in the worker and while deferred; ``startup_timeout`` catches a cluster where nothing reconciles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tfjob_sandbox.testing import wait_for

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.cluster_queries import tfjobs_of_dag
from tfjob_provider.policy import NOT_RECONCILED_MESSAGE

TIMEOUT_DAG = """
from __future__ import annotations
import datetime
from pathlib import Path
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

def remember_error(context):
    Path({errors!r}).joinpath(context["ti"].task_id).write_text(type(context["exception"]).__name__)

with DAG("deadlines", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    common = dict(image="python:3.11", command=["python", "-c", "import time; time.sleep(600)"], chief=1,
                  poll_interval=1, on_failure_callback=remember_error)
    TFJobOperator(task_id="timeout_in_worker", timeout=3, **common)
    TFJobOperator(task_id="timeout_deferred", timeout=3, deferrable=True, **common)
    limit = datetime.timedelta(seconds=4)
    TFJobOperator(task_id="execution_timeout_in_worker", execution_timeout=limit, **common)
    TFJobOperator(task_id="execution_timeout_deferred", execution_timeout=limit, deferrable=True, **common)
"""

STARTUP_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("no_training_operator", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(task_id="train", image="python:3.11", command=["python", "-c", "pass"], chief=1,
                  startup_timeout=2, poll_interval=1, deferrable=True)
"""


def test_timeouts_end_as_airflow_task_timeout_and_delete_the_tfjob(
    cluster: Any, dags_folder: Path, tmp_path: Path
) -> None:
    errors = tmp_path / "errors"
    errors.mkdir()
    path = write_dag_file(dags_folder, "deadlines", TIMEOUT_DAG.format(errors=str(errors)))
    outcome = run_dag(load_dag(path, "deadlines"))
    assert {task: outcome.task(task).state for task in outcome.tasks} == dict.fromkeys(
        (
            "timeout_in_worker",
            "timeout_deferred",
            "execution_timeout_in_worker",
            "execution_timeout_deferred",
        ),
        "failed",
    )
    assert {path.name: path.read_text() for path in errors.iterdir()} == dict.fromkeys(
        outcome.tasks, "AirflowTaskTimeout"
    )
    wait_for(
        lambda: not tfjobs_of_dag(cluster, "deadlines"), timeout=30, what="every timed-out TFJob deleted"
    )


def test_without_a_training_operator_the_task_fails_after_startup_timeout(
    own_cluster: Any, dags_folder: Path
) -> None:
    own_cluster.stop_operator()
    path = write_dag_file(dags_folder, "no_training_operator", STARTUP_DAG)
    outcome = run_dag(load_dag(path, "no_training_operator"))
    assert outcome.task("train").state == "failed"
    failure = xcom_value(outcome, "train", "tfjob_failure")
    assert failure["reason"] == "StartupTimeout"
    assert failure["message"].startswith(NOT_RECONCILED_MESSAGE)
    # The provider decided it; nothing would ever clean up this TFJob, so the operator deleted it.
    wait_for(lambda: not tfjobs_of_dag(own_cluster, "no_training_operator"), timeout=30, what="TFJob deleted")
