"""TFJobOperator end to end on the sandbox: a TFJob that succeeds, waited for in the worker and deferred."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value

DAG_TEMPLATE = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        image="python:3.11",
        command=["python", "-c", "import time; print('step 1'); time.sleep(0.3); print('done')"],
        chief=1,
        worker=2,
        ps=1,
        deferrable={deferrable},
        poll_interval=1,
        on_finish_action="keep",
    )
"""


@pytest.mark.parametrize("deferrable", [False, True], ids=["sync", "deferred"])
def test_chief_success_returns_the_result_dict(cluster: Any, dags_folder: Path, deferrable: bool) -> None:
    dag_id = f"success_{'deferred' if deferrable else 'sync'}"
    path = write_dag_file(dags_folder, dag_id, DAG_TEMPLATE.format(dag_id=dag_id, deferrable=deferrable))
    outcome = run_dag(load_dag(path, dag_id))
    assert outcome.task("train").state == "success"
    result = xcom_value(outcome, "train")
    assert result["state"] == "Succeeded"
    assert result["name"] == xcom_value(outcome, "train", "tfjob_name")
    assert result["uid"] == xcom_value(outcome, "train", "tfjob_uid")
    assert result["namespace"] == "default"
    assert result["replicas"]["Chief"]["succeeded"] == 1
