"""Example: the same training on JobSet — one argument, ``backend="jobset"``.

The task is ``crash_recovers_inside_tfjob`` of ``tfjob_retry_policies`` with ``backend="jobset"``
added: the provider translates the TFJob it builds into a JobSet (one Indexed Job per replica
type, ``TF_CONFIG`` from each pod's completion index) that the JobSet and Job controllers run,
with no training operator involved.  Worker 1 is killed (exit 137) at step 3, once; under
``ExitCode`` the Job's ``podFailurePolicy`` ignores the signal, the Job controller creates a new
pod for the same index (same hostname, same ``TF_CONFIG``), it resumes from its checkpoint, and
the job succeeds in one Airflow try — the verdict the training operator's TFJob gets.

The cluster needs the JobSet controller (v0.6.0 or later) on Kubernetes 1.31 or later; see
docs/guides/jobset.md.
"""

from __future__ import annotations

import datetime

import tfjob_example_settings as example
from airflow.sdk import DAG

from tfjob_provider.operators.tfjob import TFJobOperator

with DAG(
    dag_id="tfjob_on_jobset",
    description="The ExitCode recovery of tfjob_retry_policies, run as a JobSet",
    schedule=None,
    start_date=datetime.datetime(2024, 1, 1),
    catchup=False,
    tags=["tfjob", "jobset", "example"],
    doc_md=__doc__,
) as dag:
    TFJobOperator(
        task_id="crash_recovers_on_jobset",
        backend="jobset",
        retries=2,
        image=example.IMAGE,
        command=example.TRAINER_COMMAND,
        chief=1,
        worker=2,
        volumes=example.CHECKPOINT_VOLUMES,
        volume_mounts=example.CHECKPOINT_MOUNTS,
        deferrable=True,
        restart_policy="ExitCode",
        args=example.trainer_args(
            "--sync-replicas",
            *("--fail-at-step", "3", "--exit-code", "137", "--fail-replica", "worker:1", "--fail-once"),
        ),
    )
