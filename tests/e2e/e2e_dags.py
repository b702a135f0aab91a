"""DAGs of the full-stack test, built like the examples: TFJobs that train until the test lets them stop.

Written into the test's DAGs folder next to copies of the example DAGs (it uses their settings
module, so the trainer, image and checkpoints come from the same Airflow Variables).  Each run is
given a stop file in its conf; the trainer ends cleanly once that file exists, so the test decides
when the training finishes — after it has killed or restarted what it wanted to.
"""

from __future__ import annotations

import datetime

import tfjob_example_settings as example
from airflow.sdk import DAG

from tfjob_provider.operators.tfjob import TFJobOperator

HELD_ARGS = [
    "--steps",
    "100000",
    "--step-seconds",
    "0.2",
    "--checkpoint-dir",
    example.checkpoint_dir(),
    "--stop-file",
    "{{ dag_run.conf['stop_file'] }}",
]


def held_training(dag_id: str, *, deferrable: bool, retries: int) -> DAG:
    """Chief + 1 Worker training until the run's stop file appears; the TFJob is kept at the end."""
    with DAG(
        dag_id=dag_id,
        schedule=None,
        start_date=datetime.datetime(2024, 1, 1),
        catchup=False,
        default_args={"retries": retries},
        tags=["tfjob", "e2e"],
    ) as dag:
        TFJobOperator(
            task_id="train",
            image=example.IMAGE,
            command=example.TRAINER_COMMAND,
            args=HELD_ARGS,
            chief=1,
            worker=1,
            restart_policy="ExitCode",
            deferrable=deferrable,
            on_finish_action="keep",
            poll_interval=2,
        )
    return dag


triggerer_restart = held_training("e2e_triggerer_restart", deferrable=True, retries=0)
worker_killed = held_training("e2e_worker_killed", deferrable=False, retries=1)
killed_while_deferred = held_training("e2e_killed_while_deferred", deferrable=True, retries=0)
