"""Example: submit a TFJob without waiting, then wait for it with ``TFJobSensor`` in the triggerer.

Why two tasks: the TFJob may be started by something else (a CI pipeline, ``kubectl``, another
team's DAG), or a DAG may do other work while it trains; the sensor judges any TFJob by the same
chief/worker/PS rules as the operator and returns the same result dict.

* ``submit`` — ``wait_for_completion=False``: creates the TFJob, pushes ``tfjob_name``,
  ``tfjob_namespace`` and ``tfjob_uid`` to XCom and succeeds at once;
* ``wait_for_training`` — ``TFJobSensor(deferrable=True)`` on that name: deferred to the
  triggerer, no worker slot held, ends when the TFJob succeeds (or fails: permanent failures fail
  the sensor, retryable ones let Airflow retry it).

The TFJob outlives the task that created it, so it carries ``ttlSecondsAfterFinished``: the
training operator deletes it an hour after it finished.
"""

from __future__ import annotations

import datetime

import tfjob_example_settings as example
from airflow.sdk import DAG

from tfjob_provider.operators.tfjob import TFJobOperator
from tfjob_provider.sensors.tfjob import TFJobSensor

with DAG(
    dag_id="tfjob_sensor",
    description="Submit a TFJob without waiting; a deferrable TFJobSensor waits for it",
    schedule=None,
    start_date=datetime.datetime(2024, 1, 1),
    catchup=False,
    default_args={"retries": 2},
    tags=["tfjob", "example"],
    doc_md=__doc__,
) as dag:
    submit = TFJobOperator(
        task_id="submit",
        image=example.IMAGE,
        command=example.TRAINER_COMMAND,
        args=example.trainer_args("--sync-replicas"),
        chief=1,
        worker=2,
        restart_policy="ExitCode",
        ttl_seconds_after_finished=3600,
        volumes=example.CHECKPOINT_VOLUMES,
        volume_mounts=example.CHECKPOINT_MOUNTS,
        wait_for_completion=False,
    )
    TFJobSensor(
        task_id="wait_for_training",
        job_name=submit.output["tfjob_name"],
        namespace=submit.output["tfjob_namespace"],
        deferrable=True,
        poke_interval=5,
        timeout=3600,
    )
