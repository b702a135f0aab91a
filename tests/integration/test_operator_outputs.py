"""The results channel end to end: the deciding replica's termination message as the task's outputs,
in the worker, deferred and from the sensor; and each way a message can be unusable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tfjob_sandbox.testing import unique_name

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.trigger_helpers import submit_tfjob, tfjob_exists

#: Each replica writes its role as JSON to its termination message; only the chief's may count.
WRITES_ROLE = (
    "import json, os; role = json.loads(os.environ['TF_CONFIG'])['task'];"
    "path = os.environ.get('TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH', '/dev/termination-log');"
    "open(path, 'w').write(json.dumps({'role': role['type'], 'index': role['index'], 'loss': 0.125}))"
)

OPERATOR_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG, task
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    train = TFJobOperator(
        task_id="train",
        image="python:3.11",
        command=["python", "-c", {program!r}],
        chief={chief},
        worker=2,
        success_policy={success_policy!r},
        deferrable={deferrable},
        retries=2,
        poll_interval=1,
        # Each key of the result dict is an XCom of its own, so train.output["outputs"] pulls the outputs.
        multiple_outputs=True,
    )

    @task
    def loss(outputs):
        return None if outputs is None else outputs["loss"]

    loss(train.output["outputs"])
"""


def run_operator(
    dags_folder: Path,
    dag_id: str,
    program: str,
    *,
    deferrable: bool = False,
    chief: int = 1,
    success_policy: str | None = None,
) -> Any:
    source = OPERATOR_DAG.format(
        dag_id=dag_id, program=program, deferrable=deferrable, chief=chief, success_policy=success_policy
    )
    return run_dag(load_dag(write_dag_file(dags_folder, dag_id, source), dag_id))


@pytest.mark.parametrize("deferrable", [False, True], ids=["sync", "deferred"])
def test_the_chiefs_json_message_becomes_the_outputs(
    cluster: Any, dags_folder: Path, deferrable: bool
) -> None:
    dag_id = f"outputs_{'deferred' if deferrable else 'sync'}"
    outcome = run_operator(dags_folder, dag_id, WRITES_ROLE, deferrable=deferrable)
    assert outcome.task("train").state == "success"
    expected = {"role": "chief", "index": 0, "loss": 0.125}
    assert xcom_value(outcome, "train")["outputs"] == expected
    assert xcom_value(outcome, "train", "tfjob_outputs") == expected
    assert xcom_value(outcome, "loss") == 0.125
    result = xcom_value(outcome, "train")
    assert result["recreations"] == {"Chief": 0, "Worker": 0} and result["recreation_count"] == 0


def test_under_all_workers_worker_0_holds_the_outputs(cluster: Any, dags_folder: Path) -> None:
    outcome = run_operator(
        dags_folder, "outputs_all_workers", WRITES_ROLE, chief=0, success_policy="AllWorkers"
    )
    assert outcome.task("train").state == "success"
    assert xcom_value(outcome, "train")["outputs"] == {"role": "worker", "index": 0, "loss": 0.125}


def test_no_message_means_no_outputs(cluster: Any, dags_folder: Path) -> None:
    outcome = run_operator(dags_folder, "outputs_none", "print('trained, said nothing')")
    assert outcome.task("train").state == "success"
    assert xcom_value(outcome, "train")["outputs"] is None
    assert xcom_value(outcome, "loss") is None


WRITES_TEXT = (
    "import os; path = os.environ.get('TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH', '/dev/termination-log');"
    "open(path, 'w').write({text})"
)


@pytest.mark.parametrize(
    ("case", "text", "problem"),
    [
        ("not_json", "'loss=0.1 step=7'", "is not JSON"),
        ("over_limit", "'{\"blob\": \"' + 'x' * 5000 + '\"}'", "at Kubernetes' 4096-byte limit"),
    ],
)
def test_an_unreadable_message_fails_permanently_and_keeps_the_tfjob(
    cluster: Any, dags_folder: Path, case: str, text: str, problem: str
) -> None:
    dag_id = f"outputs_{case}"
    outcome = run_operator(dags_folder, dag_id, WRITES_TEXT.format(text=text))
    assert (outcome.task("train").state, outcome.task("train").try_number) == ("failed", 1), "retries unused"
    name = xcom_value(outcome, "train", "tfjob_name")
    assert tfjob_exists(name), "the TFJob is kept for inspection"
    summary = xcom_value(outcome, "train", "tfjob_failure")
    assert summary["reason"] == "OutputsUnreadable" and summary["retryable"] is False
    assert problem in summary["message"] and f"{name}-chief-0" in summary["message"]
    assert "training succeeded" in summary["message"]


SENSOR_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.sensors.tfjob import TFJobSensor

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobSensor(task_id="wait", job_name={name!r}, deferrable={deferrable}, poke_interval=1, timeout=120)
"""


@pytest.mark.parametrize("deferrable", [False, True], ids=["poke", "deferred"])
def test_the_sensor_returns_the_outputs_of_a_job_submitted_elsewhere(
    cluster: Any, dags_folder: Path, deferrable: bool
) -> None:
    name = unique_name("external-outputs")
    submit_tfjob(name, command=["python", "-c", WRITES_ROLE], worker=2)
    dag_id = f"sensor_outputs_{'deferred' if deferrable else 'poke'}"
    path = write_dag_file(
        dags_folder, dag_id, SENSOR_DAG.format(dag_id=dag_id, name=name, deferrable=deferrable)
    )
    outcome = run_dag(load_dag(path, dag_id))
    assert outcome.task("wait").state == "success"
    expected = {"role": "chief", "index": 0, "loss": 0.125}
    assert xcom_value(outcome, "wait")["outputs"] == expected
    assert xcom_value(outcome, "wait", "tfjob_outputs") == expected
