"""TFJobOperator(backend="jobset") and TFJobSensor(backend="jobset") end to end on the sandbox,
with the JobSet's ending written as its controller writes it (no JobSet controller runs here)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.jobset_helpers import (
    apply_jobset_crd,
    create_jobset,
    end_when_created,
    get_jobset,
    list_jobset_names,
)
from tfjob_provider._jobset import tfjob_to_jobset
from tfjob_provider.manifest import build_tfjob

OPERATOR_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        backend="jobset",
        image="python:3.11",
        command=["python", "-c", "print('done')"],
        chief=1,
        worker=1,
        deferrable={deferrable},
        on_finish_action={on_finish_action!r},
        startup_timeout=None,
        timeout=60,
    )
"""


@pytest.fixture
def jobset_cluster(cluster: Any) -> Any:
    apply_jobset_crd(cluster)
    return cluster


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_a_completed_jobset_ends_the_task_in_success(
    jobset_cluster: Any, dags_folder: Path, deferrable: bool
) -> None:
    dag_id = f"jobset_success_{'deferred' if deferrable else 'worker'}"
    source = OPERATOR_DAG.format(dag_id=dag_id, deferrable=deferrable, on_finish_action="keep")
    dag = load_dag(write_dag_file(dags_folder, dag_id, source), dag_id)
    stop = threading.Event()
    watcher = _end_any_jobset_of(jobset_cluster, dag_id, "Completed", stop)
    try:
        outcome = run_dag(dag)
    finally:
        stop.set()
        watcher.join(5)
    assert outcome.task("train").state == "success"
    name = xcom_value(outcome, "train", "tfjob_name")
    assert xcom_value(outcome, "train", "tfjob_backend") == "jobset"
    result = xcom_value(outcome, "train")
    assert result["state"] == "Succeeded" and result["name"] == name
    jobset = get_jobset(jobset_cluster, name)
    assert jobset is not None, "on_finish_action='keep' keeps the JobSet"
    assert jobset["metadata"]["uid"] == xcom_value(outcome, "train", "tfjob_uid")
    # What was submitted is the translation of the typed parameters, identity stamped.
    assert [rjob["name"] for rjob in jobset["spec"]["replicatedJobs"]] == ["chief", "worker"]
    assert jobset["metadata"]["annotations"]["tfjob-provider.airflow.apache.org/dag-id"] == dag_id
    record = xcom_value(outcome, "train", "tfjob_record")
    assert record["name"] == name and record["status"] == "success"


def test_a_failed_jobset_fails_the_task_and_is_deleted(jobset_cluster: Any, dags_folder: Path) -> None:
    dag_id = "jobset_failure"
    source = OPERATOR_DAG.format(dag_id=dag_id, deferrable=False, on_finish_action="delete")
    dag = load_dag(write_dag_file(dags_folder, dag_id, source), dag_id)
    stop = threading.Event()
    watcher = _end_any_jobset_of(jobset_cluster, dag_id, "Failed", stop)
    try:
        outcome = run_dag(dag)
    finally:
        stop.set()
        watcher.join(5)
    assert outcome.task("train").state == "failed"
    name = xcom_value(outcome, "train", "tfjob_name")
    assert get_jobset(jobset_cluster, name) is None or get_jobset(jobset_cluster, name)["metadata"].get(
        "deletionTimestamp"
    )


def test_a_refused_manifest_fails_before_any_request(jobset_cluster: Any, dags_folder: Path) -> None:
    dag_id = "jobset_refused"
    source = OPERATOR_DAG.format(dag_id=dag_id, deferrable=False, on_finish_action="keep").replace(
        'backend="jobset",', 'backend="jobset", enable_dynamic_worker=True, retries=2,'
    )
    dag = load_dag(write_dag_file(dags_folder, dag_id, source), dag_id)
    jobset_cluster.reset_request_counts()
    outcome = run_dag(dag)
    requests = jobset_cluster.request_total()
    task = outcome.task("train")
    assert task.state == "failed"
    assert task.try_number == 1, "a refusal is permanent: no retry"
    assert requests == 0, "not one request: no discovery, no get, no create"


SENSOR_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.sensors.tfjob import TFJobSensor

with DAG("jobset_sensor", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobSensor(task_id="poke", job_name={name!r}, backend="jobset", poke_interval=0.5, timeout=60)
    TFJobSensor(task_id="deferred", job_name={name!r}, backend="jobset", deferrable=True, timeout=60)
"""


def test_the_sensor_waits_for_a_jobset_submitted_elsewhere(jobset_cluster: Any, dags_folder: Path) -> None:
    name = "external-jobset"
    manifest = tfjob_to_jobset(
        build_tfjob(name=name, namespace="default", image="python:3.11", command=["true"], chief=1)
    )
    create_jobset(jobset_cluster, manifest)
    stop = threading.Event()
    watcher = end_when_created(jobset_cluster, name, "Completed", stop)
    path = write_dag_file(dags_folder, "jobset_sensor", SENSOR_DAG.format(name=name))
    try:
        outcome = run_dag(load_dag(path, "jobset_sensor"))
    finally:
        stop.set()
        watcher.join(5)
    for task_id in ("poke", "deferred"):
        assert outcome.task(task_id).state == "success", task_id
        assert xcom_value(outcome, task_id)["state"] == "Succeeded"
        assert xcom_value(outcome, task_id, "tfjob_name") == name


def _end_any_jobset_of(sandbox: Any, dag_id: str, condition: str, stop: threading.Event) -> threading.Thread:
    """End the JobSet of ``dag_id``'s task once it is submitted (its name holds the run id)."""

    def run() -> None:
        while not stop.is_set():
            for name in list_jobset_names(sandbox, dag_id):
                end_when_created(sandbox, name, condition, stop).join()
                return
            stop.wait(0.1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread
