"""Example: distributed training — Chief + 2 Workers + 1 parameter server — and a task that uses the result.

What it shows:

* a TFJob built from typed parameters (no YAML): one image and command for every replica type,
  ``chief=1, worker=2, ps=1``, the ``ExitCode`` restart policy (a replica killed by a signal is
  recreated by the training operator, a program error fails the job);
* ``deferrable=True``: while the TFJob runs, the task waits in the triggerer and holds no worker
  slot; the chief's log is in the task log (streamed in the worker, log tails in the failure
  report when deferred);
* the result: ``TFJobOperator`` returns a dict (name, uid, state, reason, start and completion
  time, replica counts, restarts, recreations) as its ``return_value`` XCom; ``register_model``
  reads it;
* the training's own results: the trainer leaves its final step and loss as JSON in its
  termination message, and the chief's is the result's ``outputs``; with ``multiple_outputs=True``
  every key of the result is also an XCom of its own, so ``train.output["outputs"]`` is that dict.

Settings (image, trainer, checkpoint storage) are Airflow Variables; see ``tfjob_example_settings``.
"""

from __future__ import annotations

import datetime
from typing import Any

import tfjob_example_settings as example
from airflow.sdk import DAG, task

from tfjob_provider.operators.tfjob import TFJobOperator

with DAG(
    dag_id="tfjob_distributed_training",
    description="Chief + 2 Workers + 1 PS TFJob from typed parameters, deferrable; the result feeds a task",
    schedule=None,
    start_date=datetime.datetime(2024, 1, 1),
    catchup=False,
    default_args={"retries": 2},
    params={"steps": 8},
    tags=["tfjob", "example"],
    doc_md=__doc__,
) as dag:
    train = TFJobOperator(
        task_id="train",
        image=example.IMAGE,
        command=example.TRAINER_COMMAND,
        args=example.trainer_args("--sync-replicas", steps="{{ params.steps }}"),
        chief=1,
        worker=2,
        ps=1,
        restart_policy="ExitCode",
        volumes=example.CHECKPOINT_VOLUMES,
        volume_mounts=example.CHECKPOINT_MOUNTS,
        deferrable=True,
        get_logs=True,
        poll_interval=5,
        multiple_outputs=True,
    )

    @task
    def register_model(
        result: dict[str, Any], outputs: dict[str, Any] | None, checkpoint_dir: str
    ) -> dict[str, Any]:
        """Use the TFJob's result and the chief's outputs: here, describe the model it left in the
        checkpoint directory."""
        started, ended = result.get("start_time"), result.get("completion_time")
        seconds = None
        if started and ended:
            elapsed = datetime.datetime.fromisoformat(ended) - datetime.datetime.fromisoformat(started)
            seconds = round(elapsed.total_seconds(), 1)
        print(
            f"TFJob {result['namespace']}/{result['name']} {result['state']} ({result['reason']}) "
            f"in {seconds}s with {result['restart_count']} restarts and {result['recreation_count']} "
            f"recreated pods; model checkpoints in {checkpoint_dir}"
        )
        if outputs is not None:
            print(
                f"the chief trained {outputs['final_step']}/{outputs['steps']} steps, "
                f"final loss {outputs['loss']}"
            )
        return {
            "tfjob": result["name"],
            "tfjob_uid": result["uid"],
            "model_dir": checkpoint_dir,
            "training_seconds": seconds,
            "replicas": result["replicas"],
            "final_step": outputs["final_step"] if outputs else None,
            "loss": outputs["loss"] if outputs else None,
        }

    register_model(train.output, train.output["outputs"], example.checkpoint_dir("train"))
