"""Example: a trained model is an Airflow asset event; ``deploy_model`` starts for each new model.

What it shows:

* ``tfjob_model_training``: a ``@task.tfjob`` training (Chief + 1 Worker) whose chief returns
  ``{"model_uri": ..., "loss": ...}``; its ``outlets`` are the asset ``tfjob_example_model`` and the
  alias ``tfjob_example_model_versions``;
* on success the asset event's ``extra`` carries the training's outputs and the TFJob's identity
  (``extra["outputs"]``, ``extra["tfjob"]``: namespace, name, uid, state, reason, times, replica
  counts, recreations), and ``output_asset_keys=["model_uri"]`` adds one event per model URI to
  the alias — an asset named by the URI itself, so a DAG can wait for that very model;
* ``deploy_model`` is scheduled on ``tfjob_example_model``: it reads the triggering event's
  ``extra`` and prints which model it deploys (URI, loss, TFJob UID) and which run trained it;
* a failed or retried try emits no event, so ``deploy_model`` never starts for a failed training.

docs/guides/assets-and-lineage.md has the keys of ``extra`` and the OpenLineage side.
"""

from __future__ import annotations

import datetime
from typing import Any

import tfjob_example_settings as example
from airflow.sdk import Asset, AssetAlias, dag, task

MODEL = Asset("tfjob_example_model")
MODEL_VERSIONS = AssetAlias("tfjob_example_model_versions")


@dag(
    dag_id="tfjob_model_training",
    description="@task.tfjob training whose success is an asset event carrying the model's URI and loss",
    schedule=None,
    start_date=datetime.datetime(2024, 1, 1),
    catchup=False,
    params={"steps": 12},
    tags=["tfjob", "example", "assets"],
    doc_md=__doc__,
)
def tfjob_model_training() -> None:
    @task.tfjob(
        image=example.IMAGE,
        interpreter=example.setting("python"),
        chief=1,
        worker=1,
        restart_policy="ExitCode",
        retries=1,
        poll_interval=2,
        outlets=[MODEL, MODEL_VERSIONS],
        output_asset_keys=["model_uri"],
    )
    def train(model_dir: str, steps: int = 100) -> dict:
        import json
        import os

        task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task") or {"type": "worker", "index": 0}
        loss = 0.0
        for step in range(1, int(steps) + 1):
            loss = 2.0 * 0.8**step + 0.05  # a toy loss that falls with every step
        print(f"[{task['type']}-{task['index']}] trained {steps} steps: loss={loss:.4f}", flush=True)
        return {"model_uri": f"file://{model_dir}/model", "loss": round(loss, 4), "steps": int(steps)}

    train(example.checkpoint_dir(), steps="{{ params.steps }}")


@dag(
    dag_id="deploy_model",
    description="Runs for each new tfjob_example_model asset event; deploys the model it names",
    schedule=[MODEL],
    start_date=datetime.datetime(2024, 1, 1),
    catchup=False,
    tags=["tfjob", "example", "assets"],
    doc_md=__doc__,
)
def deploy_model() -> None:
    @task
    def show_model(triggering_asset_events: Any = None) -> dict[str, Any]:
        """Read the model from the asset event that started this run; a real DAG would deploy it."""
        event = triggering_asset_events[MODEL][-1]
        outputs, tfjob = event.extra["outputs"], event.extra["tfjob"]
        print(
            f"deploying {outputs['model_uri']} (loss {outputs['loss']}), trained by TFJob "
            f"{tfjob['namespace']}/{tfjob['name']} uid {tfjob['uid']} in {event.source_dag_id} "
            f"run {event.source_run_id}"
        )
        return {
            "model_uri": outputs["model_uri"],
            "loss": outputs["loss"],
            "tfjob_uid": tfjob["uid"],
            "source_dag_id": event.source_dag_id,
            "source_run_id": event.source_run_id,
        }

    show_model()


tfjob_model_training()
deploy_model()
