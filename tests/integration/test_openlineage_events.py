"""OpenLineage events of TFJob tasks through the real OpenLineage provider: its listener and extractor
in ``dag.test()``, its file transport, the events read back and checked field by field.

The DAG runs in a child process: the provider decides once per process, when Airflow loads its
plugins, whether OpenLineage is configured, and the rest of the test session runs without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from tfjob_sandbox.testing import unique_name

from tests.integration.airflow_harness import RunOutcome, write_dag_file, xcom_value
from tests.integration.trigger_helpers import submit_tfjob

#: Outputs: the model written, the data read, a metric.
WRITES_OUTPUTS = (
    "import json, os;"
    "path = os.environ.get('TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH', '/dev/termination-log');"
    "open(path, 'w').write(json.dumps({'model_uri': 's3://models/mnist/v1',"
    " 'data_uri': 'hdfs://namenode:8020/data/mnist', 'loss': 0.125}))"
)

DAG_SOURCE = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG, Asset
from tfjob_provider.operators.tfjob import TFJobOperator
from tfjob_provider.sensors.tfjob import TFJobSensor

SECRET = {{"API_TOKEN": {token!r}, "TRY": "{{{{ ti.try_number }}}}"}}

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        image="python:3.11",
        command=["python", "-c", {program!r}, "--token", {token!r}],
        env=SECRET,
        chief=1,
        worker=2,
        restart_policy="ExitCode",
        backoff_limit=3,
        poll_interval=1,
        inlets=[Asset("gs://data/mnist/train")],
        outlets=[Asset("s3://models/declared")],
        output_asset_keys=["model_uri"],
        input_asset_keys=["data_uri"],
    )
    TFJobOperator(
        task_id="fails",
        image="python:3.11",
        command=["python", "-c", "import sys; sys.exit(3)", {token!r}],
        env=SECRET,
        worker=1,
        retries=2,
        poll_interval=1,
    )
    TFJobOperator(
        task_id="retried",
        image="python:3.11",
        command=["python", "-c", "import os, sys; sys.exit(137 if os.environ['TRY'] == '1' else 0)"],
        env=SECRET,
        worker=1,
        restart_policy="Never",
        retries=1,
        poll_interval=1,
    )
    TFJobSensor(task_id="wait", job_name={external!r}, poke_interval=1, timeout=120)
"""

RUNNER = """
import sys
from pathlib import Path
from tests.integration.airflow_harness import load_dag, run_dag
outcome = run_dag(load_dag(Path(sys.argv[1]), sys.argv[2]))
print("RUN_ID=" + outcome.run_id)
"""


def run_with_openlineage(path: Path, dag_id: str, events_file: Path) -> str:
    """Run the DAG in a child process whose OpenLineage provider writes every event to
    ``events_file``; the run id."""
    env = {
        **os.environ,
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": str(events_file), "append": True}
        ),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "tfjob-tests",
    }
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(path), dag_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
        cwd=Path(__file__).parents[2],
        check=False,
    )
    run_ids = [line[len("RUN_ID=") :] for line in done.stdout.splitlines() if line.startswith("RUN_ID=")]
    assert run_ids, f"the DAG did not run:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return run_ids[-1]


def task_events(events: list[dict[str, Any]], dag_id: str, task_id: str) -> list[dict[str, Any]]:
    return [event for event in events if event["job"]["name"] == f"{dag_id}.{task_id}"]


def by_type(events: list[dict[str, Any]], event_type: str) -> list[dict[str, Any]]:
    return [event for event in events if event["eventType"] == event_type]


def datasets(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(item["namespace"], item["name"]) for item in items]


def facet(event: dict[str, Any], where: str, key: str) -> dict[str, Any]:
    """A facet without its ``_producer`` and ``_schemaURL``."""
    return {name: value for name, value in event[where]["facets"][key].items() if not name.startswith("_")}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_succeeded_failed_and_retried_tfjobs_in_openlineage_events(
    cluster: Any, dags_folder: Path, tmp_path: Path
) -> None:
    token = f"tok-{uuid.uuid4().hex}"
    external = unique_name("lineage-external")
    submit_tfjob(external, command=["python", "-c", WRITES_OUTPUTS], worker=1)
    dag_id = "openlineage_events"
    source = DAG_SOURCE.format(dag_id=dag_id, program=WRITES_OUTPUTS, token=token, external=external)
    events_file = tmp_path / "events.jsonl"
    run_id = run_with_openlineage(write_dag_file(dags_folder, dag_id, source), dag_id, events_file)
    outcome = RunOutcome(dag_id=dag_id, run_id=run_id, state="", tasks={})
    text = events_file.read_text()
    events = [json.loads(line) for line in text.splitlines() if line.strip()]

    assert token not in text, "a token of the manifest reached an OpenLineage event"

    # --- the succeeded TFJob -------------------------------------------------------------------
    train = task_events(events, dag_id, "train")
    (start,) = by_type(train, "START")
    (complete,) = by_type(train, "COMPLETE")
    shape = {
        "replicaSpecs": {
            "Chief": {"replicas": 1, "restartPolicy": "ExitCode", "images": ["python:3.11"]},
            "Worker": {"replicas": 2, "restartPolicy": "ExitCode", "images": ["python:3.11"]},
        },
        "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 3},
        "successPolicy": "Default",
        "enableDynamicWorker": False,
    }
    assert facet(start, "job", "tfjob") == shape
    assert facet(complete, "job", "tfjob") == shape
    assert "tfjob" not in start["run"]["facets"]
    assert datasets(start["inputs"]) == [("gs://data", "mnist/train")]
    assert datasets(start["outputs"]) == [("s3://models", "declared")]
    assert datasets(complete["inputs"]) == [
        ("gs://data", "mnist/train"),
        ("hdfs://namenode:8020", "/data/mnist"),
    ]
    assert datasets(complete["outputs"]) == [("s3://models", "declared"), ("s3://models", "mnist/v1")]
    name = xcom_value(outcome, "train", "tfjob_name")
    result = xcom_value(outcome, "train")
    ran = facet(complete, "run", "tfjob")
    assert "retryable" not in ran, "a success is not retryable or not: the field (None) is left out"
    assert isinstance(ran.pop("durationSeconds"), (int, float))
    assert isinstance(ran.pop("message"), str)
    assert ran == {
        "ending": "success",
        "namespace": "default",
        "name": name,
        "uid": xcom_value(outcome, "train", "tfjob_uid"),
        "state": "Succeeded",
        "reason": "ChiefSucceeded",
        "decidingPods": [{"pod": f"{name}-chief-0", "replica": "Chief 0"}],
        "replicas": result["replicas"],
        "recreations": {},
        "recreationCount": 0,
        "startTime": result["start_time"],
        "completionTime": result["completion_time"],
        "outputKeys": ["data_uri", "loss", "model_uri"],
    }

    # --- the permanent failure -----------------------------------------------------------------
    fails = task_events(events, dag_id, "fails")
    assert [event["eventType"] for event in fails] == ["START", "FAIL"], "one try, no retry"
    failed = fails[1]
    name = xcom_value(outcome, "fails", "tfjob_name")
    ran = facet(failed, "run", "tfjob")
    assert (ran["ending"], ran["state"], ran["reason"], ran["retryable"]) == (
        "failed",
        "Failed",
        "PermanentExitCode",
        False,
    )
    assert ran["decidingPods"] == [{"pod": f"{name}-worker-0", "replica": "Worker 0"}]
    assert ran["outputKeys"] == [] and ran["uid"] == xcom_value(outcome, "fails", "tfjob_uid")
    error = facet(failed, "run", "errorMessage")
    assert f"{name}-worker-0" in error["message"] and "PermanentExitCode" in error["message"]
    assert facet(failed, "job", "tfjob")["replicaSpecs"] == {
        "Worker": {"replicas": 1, "restartPolicy": "Never", "images": ["python:3.11"]}
    }

    # --- the retried one: a retryable FAIL on try 1, then a COMPLETE of try 2's fresh TFJob -----
    retried = task_events(events, dag_id, "retried")
    assert [event["eventType"] for event in retried] == ["START", "FAIL", "START", "COMPLETE"]
    first, second = facet(retried[1], "run", "tfjob"), facet(retried[3], "run", "tfjob")
    assert (first["ending"], first["reason"], first["retryable"]) == ("retry", "RetryableExitCode", True)
    assert second["ending"] == "success" and second["state"] == "Succeeded"
    assert second["uid"] == xcom_value(outcome, "retried", "tfjob_uid") != first["uid"]
    assert retried[1]["run"]["runId"] != retried[3]["run"]["runId"], "each try is a run of its own"

    # --- the sensor: the shape of a TFJob it did not submit, read from the cluster --------------
    wait = task_events(events, dag_id, "wait")
    (sensed,) = by_type(wait, "COMPLETE")
    assert facet(sensed, "job", "tfjob")["replicaSpecs"]["Worker"]["replicas"] == 1
    ran = facet(sensed, "run", "tfjob")
    assert (ran["name"], ran["state"], ran["ending"]) == (external, "Succeeded", "success")
    assert datasets(sensed["outputs"]) == [] and ran["outputKeys"] == ["data_uri", "loss", "model_uri"]
