"""Example: who retries what — the training operator inside the TFJob, or Airflow around it.

Three tasks, three kinds of failure, all on a Chief + 2 Workers job with ``retries=2``:

* ``crash_recovers_inside_tfjob`` — ``restartPolicy: ExitCode``; worker 1 is killed (exit 137,
  as a SIGKILL or OOM kill) at step 3, once.  Exit codes of 128 and above are retryable, so the
  training operator deletes and recreates the pod; it resumes from its checkpoint while the
  others wait for it (synchronous training), and the TFJob succeeds.  Airflow sees one try.
* ``permanent_error_fails_fast`` — worker 0 exits with 3 (the program's own error, e.g. bad
  input data).  Codes 1-127 are permanent: the TFJob fails and the task fails at once with
  ``AirflowFailException``; the two Airflow retries are *not* spent.
* ``transient_failure_retried_by_airflow`` — ``restartPolicy: Never``; worker 1 is killed (137)
  on Airflow's try 1 only.  The TFJob fails, retryably, so the task raises ``AirflowException``
  and Airflow retries: try 2 deletes the failed TFJob, submits a fresh one, which resumes from
  the checkpoint and succeeds.  (The retry waits ``retry_delay``: Airflow's
  ``[core] default_task_retry_delay``, 300 s unless configured.)

The DAG run therefore ends *failed* — by design, because of the permanent error.
"""

from __future__ import annotations

import datetime

import tfjob_example_settings as example
from airflow.sdk import DAG

from tfjob_provider.operators.tfjob import TFJobOperator

with DAG(
    dag_id="tfjob_retry_policies",
    description="ExitCode recovery inside a TFJob, a permanent error, a transient failure Airflow retries",
    schedule=None,
    start_date=datetime.datetime(2024, 1, 1),
    catchup=False,
    default_args={
        "retries": 2,
        "image": example.IMAGE,
        "command": example.TRAINER_COMMAND,
        "chief": 1,
        "worker": 2,
        "volumes": example.CHECKPOINT_VOLUMES,
        "volume_mounts": example.CHECKPOINT_MOUNTS,
        "deferrable": True,
        "poll_interval": 5,
    },
    tags=["tfjob", "example"],
    doc_md=__doc__,
) as dag:
    TFJobOperator(
        task_id="crash_recovers_inside_tfjob",
        restart_policy="ExitCode",
        args=example.trainer_args(
            "--sync-replicas",
            *("--fail-at-step", "3", "--exit-code", "137", "--fail-replica", "worker:1", "--fail-once"),
        ),
    )
    TFJobOperator(
        task_id="permanent_error_fails_fast",
        restart_policy="ExitCode",
        args=example.trainer_args(
            "--sync-replicas",
            *("--fail-at-step", "2", "--exit-code", "3", "--fail-replica", "worker:0"),
        ),
    )
    TFJobOperator(
        task_id="transient_failure_retried_by_airflow",
        restart_policy="Never",
        env=example.TRY_NUMBER_ENV,
        args=example.trainer_args(
            "--sync-replicas",
            *("--fail-at-step", "2", "--exit-code", "137", "--fail-replica", "worker:1"),
            *("--fail-if-env", "AIRFLOW_TRY_NUMBER=1"),
        ),
    )
