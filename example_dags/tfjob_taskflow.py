"""Example: a distributed training written as a Python function — ``@task.tfjob`` — feeding a ``@task``.

What it shows:

* ``@task.tfjob`` takes every TFJobOperator parameter (here ``chief=1, worker=2, ps=1``, the
  ``ExitCode`` restart policy, ``deferrable=True``, ``retries=2``) plus ``interpreter``, the Python
  inside the image;
* the function's arguments are ordinary TaskFlow arguments: ``data_uri`` is the XCom of an
  upstream ``@task``, ``steps`` a rendered DAG param; they travel to the pods as JSON;
* the same function runs in every replica — ``TF_CONFIG`` tells each one its role — and the
  *chief's* return value becomes the task's ``return_value`` XCom, which ``show_metrics`` receives
  as a plain dict; the TFJob's own result dict (verdict, replica counts, recreations) is in the
  ``tfjob_result`` XCom;
* everything the function needs is imported inside it: it runs alone in each pod, where the DAG
  file's imports do not exist (``@task.tfjob`` refuses a function that forgets, at parse time).

The function uses TensorFlow when the image has it, else plain Python, so it runs in ``make demo``
on the sandbox (where the interpreter is a local one, from the ``tfjob_example_python`` Variable)
as well as on a cluster.
"""

from __future__ import annotations

import datetime
from typing import Any

import tfjob_example_settings as example
from airflow.sdk import dag, get_current_context, task


@dag(
    dag_id="tfjob_taskflow",
    description="@task.tfjob: a Python function as a Chief + 2 Workers + 1 PS TFJob; the chief's return "
    "value feeds a @task",
    schedule=None,
    start_date=datetime.datetime(2024, 1, 1),
    catchup=False,
    params={"steps": 20},
    tags=["tfjob", "example", "taskflow"],
    doc_md=__doc__,
)
def tfjob_taskflow() -> None:
    @task
    def pick_data() -> str:
        """The data this run trains on: here a URI derived from the logical date."""
        return f"memory://mnist/{get_current_context()['ds']}"

    @task.tfjob(
        image=example.IMAGE,
        interpreter=example.setting("python"),
        chief=1,
        worker=2,
        ps=1,
        restart_policy="ExitCode",
        deferrable=True,
        retries=2,
        poll_interval=5,
    )
    def train(data_uri: str, steps: int = 1000) -> dict:
        import json
        import os

        task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task") or {"type": "worker", "index": 0}
        role = f"{task['type']}-{task['index']}"
        try:
            import tensorflow as tf
        except ImportError:
            tf = None
        # A toy training: a loss that falls with every step, computed with TensorFlow when present.
        loss = 0.0
        for step in range(1, int(steps) + 1):
            value = 2.0 * 0.8**step + 0.05
            loss = float(tf.constant(value).numpy()) if tf is not None else value
        print(f"[{role}] trained {steps} steps on {data_uri}: loss={loss:.4f}", flush=True)
        return {
            "role": role,
            "data_uri": data_uri,
            "steps": int(steps),
            "loss": round(loss, 4),
            "model_uri": f"{data_uri}/model",
            "tensorflow": tf.__version__ if tf is not None else None,
        }

    @task
    def show_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
        """Print the chief's metrics; a real pipeline would register the model or evaluate it."""
        print(
            f"trained by {metrics['role']}: {metrics['steps']} steps on {metrics['data_uri']}, "
            f"loss {metrics['loss']}, model at {metrics['model_uri']}"
        )
        return metrics

    show_metrics(train(pick_data(), steps="{{ params.steps }}"))


tfjob_taskflow()
