"""Asset events of TFJob tasks, read back from the metadata DB after ``dag.test()``: the outputs and
identity in ``extra``, one alias event per output URI, none for a failed or a retried try."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tfjob_sandbox.testing import unique_name

from tests.integration.airflow_harness import RunOutcome, load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.trigger_helpers import submit_tfjob

#: The chief reports a model URI, a URI Airflow refuses as an asset, its loss and the try number.
WRITES_MODEL = (
    "import json, os;"
    "path = os.environ.get('TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH', '/dev/termination-log');"
    "open(path, 'w').write(json.dumps({'model_uri': 's3://models/mnist/' + os.environ['RUN'],"
    " 'refused_uri': 'airflow://not-an-asset', 'loss': 0.125, 'try': os.environ['TRY']}))"
)

#: The same, then exit 137 (retryable under ``Never``) on Airflow's try 1 only.
CRASHES_ON_TRY_1 = f"{WRITES_MODEL}; import sys; sys.exit(137 if os.environ['TRY'] == '1' else 0)"

DAG_SOURCE = """
from __future__ import annotations
import datetime, os
from airflow.sdk import DAG, Asset, AssetAlias, task
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    run = "{{{{ run_id | replace(':', '-') | replace('+', '-') }}}}"
    env = {{"RUN": run, "TRY": "{{{{ ti.try_number }}}}"}}
    TFJobOperator(
        task_id="train",
        image="python:3.11",
        command=["python", "-c", {program!r}],
        env=env,
        chief=1,
        worker=1,
        poll_interval=1,
        outlets=[Asset("{prefix}_model"), AssetAlias("{prefix}_models")],
        output_asset_keys=["model_uri", "refused_uri", "missing_uri"],
    )
    TFJobOperator(
        task_id="fails",
        image="python:3.11",
        command=["python", "-c", "import sys; sys.exit(3)"],
        worker=1,
        retries=2,
        poll_interval=1,
        outlets=[Asset("{prefix}_failed_model")],
    )
    TFJobOperator(
        task_id="retried",
        image="python:3.11",
        command=["python", "-c", {retried!r}],
        env=env,
        worker=1,
        restart_policy="Never",
        retries=1,
        poll_interval=1,
        outlets=[Asset("{prefix}_retried_model")],
    )

    @task.tfjob(
        image="python:3.11",
        interpreter={python!r},
        worker=1,
        poll_interval=1,
        outlets=[AssetAlias("{prefix}_function_models")],
        output_asset_keys=["model_uri"],
    )
    def function(run: str) -> dict:
        return {{"model_uri": f"gs://models/function/{{run}}", "loss": 0.5}}

    function("{{{{ run_id | replace(':', '-') | replace('+', '-') }}}}")
"""


def asset_events(name: str | None = None, uri: str | None = None) -> list[dict[str, Any]]:
    """Every asset event of the asset called ``name`` (or with ``uri``), oldest first."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        query = select(AssetEvent).join(AssetModel, AssetEvent.asset_id == AssetModel.id)
        query = query.where(AssetModel.name == name) if name else query.where(AssetModel.uri == uri)
        return [
            {
                "extra": dict(event.extra or {}),
                "source_task_id": event.source_task_id,
                "source_run_id": event.source_run_id,
                "aliases": sorted(alias.name for alias in event.source_aliases),
            }
            for event in session.scalars(query.order_by(AssetEvent.id))
        ]


def run_tasks(dags_folder: Path, dag_id: str, prefix: str) -> RunOutcome:
    source = DAG_SOURCE.format(
        dag_id=dag_id, program=WRITES_MODEL, retried=CRASHES_ON_TRY_1, prefix=prefix, python=sys.executable
    )
    return run_dag(load_dag(write_dag_file(dags_folder, dag_id, source), dag_id))


def test_outlets_carry_the_outputs_and_the_identity_and_only_a_success_emits(
    cluster: Any, dags_folder: Path
) -> None:
    prefix = unique_name("assets").replace("-", "_")
    outcome = run_tasks(dags_folder, "asset_events", prefix)
    run_slug = outcome.run_id.replace(":", "-").replace("+", "-")
    states = {task: outcome.task(task).state for task in ("train", "fails", "retried", "function")}
    assert states == {"train": "success", "fails": "failed", "retried": "success", "function": "success"}
    assert outcome.task("retried").try_number == 2

    # The Asset outlet: one event, whose extra is the outputs and the TFJob's identity and outcome.
    result = xcom_value(outcome, "train")
    (event,) = asset_events(name=f"{prefix}_model")
    assert event["source_task_id"] == "train" and event["source_run_id"] == outcome.run_id
    extra = event["extra"]
    assert set(extra) == {"tfjob", "outputs"}
    assert extra["outputs"] == {
        "model_uri": f"s3://models/mnist/{run_slug}",
        "refused_uri": "airflow://not-an-asset",
        "loss": 0.125,
        "try": "1",
    }
    tfjob = extra["tfjob"]
    assert tfjob["uid"] == xcom_value(outcome, "train", "tfjob_uid") and tfjob["uid"]
    assert (tfjob["namespace"], tfjob["name"]) == ("default", xcom_value(outcome, "train", "tfjob_name"))
    assert (tfjob["state"], tfjob["reason"]) == ("Succeeded", "ChiefSucceeded")
    assert (
        tfjob["start_time"] == result["start_time"] and tfjob["completion_time"] == result["completion_time"]
    )
    assert tfjob["replicas"]["Chief"]["succeeded"] == 1 and set(tfjob["replicas"]) == {"Chief", "Worker"}
    assert tfjob["recreations"] == {"Chief": 0, "Worker": 0} and tfjob["recreation_count"] == 0
    assert "template" not in str(extra) and "env" not in str(extra), "no pod spec in an asset event"

    # The alias: one asset event per URI Airflow accepts; the refused and the missing ones are skipped.
    (model,) = asset_events(uri=f"s3://models/mnist/{run_slug}")
    assert model["aliases"] == [f"{prefix}_models"]
    assert model["extra"] == {**extra, "output_key": "model_uri"}
    assert asset_events(uri="airflow://not-an-asset") == []

    # A failed try emits nothing; a retried task only for its successful try's TFJob.
    assert asset_events(name=f"{prefix}_failed_model") == []
    (retried,) = asset_events(name=f"{prefix}_retried_model")
    assert retried["extra"]["tfjob"]["uid"] == xcom_value(outcome, "retried", "tfjob_uid")
    assert retried["extra"]["outputs"]["try"] == "2"

    # @task.tfjob: the function's return value is the outputs.
    (function_model,) = asset_events(uri=f"gs://models/function/{run_slug}")
    assert function_model["aliases"] == [f"{prefix}_function_models"]
    assert function_model["extra"]["outputs"] == {
        "model_uri": f"gs://models/function/{run_slug}",
        "loss": 0.5,
    }
    assert function_model["extra"]["tfjob"]["uid"] == xcom_value(outcome, "function", "tfjob_uid")


SENSOR_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG, Asset
from tfjob_provider.sensors.tfjob import TFJobSensor

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobSensor(
        task_id="wait", job_name={name!r}, poke_interval=1, timeout=120, outlets=[Asset({asset!r})]
    )
"""


def test_the_sensor_emits_the_event_of_a_job_submitted_elsewhere(cluster: Any, dags_folder: Path) -> None:
    name = unique_name("asset-sensor")
    program = WRITES_MODEL.replace("os.environ['RUN']", "'external'").replace("os.environ['TRY']", "'0'")
    uid = submit_tfjob(name, command=["python", "-c", program], worker=1)
    asset = f"{name.replace('-', '_')}_model"
    path = write_dag_file(
        dags_folder, "asset_sensor", SENSOR_DAG.format(dag_id="asset_sensor", name=name, asset=asset)
    )
    outcome = run_dag(load_dag(path, "asset_sensor"))
    assert outcome.task("wait").state == "success"
    (event,) = asset_events(name=asset)
    assert event["extra"]["tfjob"]["uid"] == uid and event["extra"]["tfjob"]["name"] == name
    assert event["extra"]["outputs"]["model_uri"] == "s3://models/mnist/external"
