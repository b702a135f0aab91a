"""Example: a TFJob kept as a YAML file, templated with Jinja (``{{ ds }}``, params, Variables).

What it shows: ``tfjob=`` takes the path of a ``.yaml`` file next to the DAG (``.yaml``, ``.yml``
and ``.json`` are in ``TFJobOperator.template_ext``), so Airflow reads the file and renders it as a
template before the task runs — the logical date selects the data partition, ``params`` set the
number of workers and steps (override them per run by triggering with a config), Variables
choose the image.  The rendered manifest is shown in the task's "Rendered Template" view; the
provider validates it (all problems at once) before the first API call.  Its ``metadata.name`` is
replaced by a deterministic per-task-instance name, so retries find the same TFJob.
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from tfjob_provider.operators.tfjob import TFJobOperator

with DAG(
    dag_id="tfjob_from_yaml",
    description="A TFJob YAML file rendered with Jinja ({{ ds }}, params, Variables)",
    schedule=None,
    start_date=datetime.datetime(2024, 1, 1),
    catchup=False,
    default_args={"retries": 2},
    params={"workers": 2, "steps": 6, "team": "vision"},
    tags=["tfjob", "example"],
    doc_md=__doc__,
) as dag:
    TFJobOperator(
        task_id="train_from_yaml",
        tfjob="tfjobs/nightly_training.yaml",
        deferrable=True,
        poll_interval=5,
    )
