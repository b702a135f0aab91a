"""What is retried where: inside one try by the training operator, or as a fresh TFJob by Airflow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from tfjob_sandbox.testing import sync_api_client

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tfjob_provider.constants import ANNOTATION_TRY_NUMBER

#: First run: record itself and, a few seconds later, die as if OOM-killed (137); later runs:
#: record and succeed.  The delay puts the crash inside the wait: recreations are counted by the
#: waiter's watch, and a deferred task's trigger starts watching only after the task deferred, so a
#: pod replaced before that is (rightly) not seen being replaced.
CRASH_ONCE = """
import os, sys, time
runs = os.path.join(sys.argv[1], "runs")
first = not os.path.exists(runs)
with open(runs, "a") as f:
    f.write(os.environ.get("TRY", "-") + "\\n")
if first:
    time.sleep(4)
sys.exit(137 if first else 0)
"""

EXIT_CODE_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        retries=2,
        image="python:3.11",
        command=["python", "-c", {script!r}, {workdir!r}],
        worker=1,
        restart_policy="ExitCode",
        deferrable={deferrable},
        poll_interval=1,
    )
"""

RETRY_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("retry_fresh_tfjob", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        retries=2,
        image="python:3.11",
        command=["python", "-c", "import os, sys; sys.exit(137 if os.environ['TRY'] == '1' else 0)"],
        env={"TRY": "{{ ti.try_number }}"},
        worker=1,
        restart_policy="Never",
        on_finish_action="keep",
        poll_interval=1,
    )
"""


@pytest.mark.parametrize("deferrable", [False, True], ids=["sync", "deferred"])
def test_exit_code_137_is_restarted_by_the_training_operator_within_one_try(
    cluster: Any, dags_folder: Path, tmp_path: Path, deferrable: bool
) -> None:
    dag_id = f"exitcode_restart_{'deferred' if deferrable else 'sync'}"
    source = EXIT_CODE_DAG.format(
        dag_id=dag_id, script=CRASH_ONCE, workdir=str(tmp_path), deferrable=deferrable
    )
    outcome = run_dag(load_dag(write_dag_file(dags_folder, dag_id, source), dag_id))
    assert (outcome.task("train").state, outcome.task("train").try_number) == ("success", 1)
    assert (tmp_path / "runs").read_text().splitlines() == ["-", "-"]  # the pod ran twice
    result = xcom_value(outcome, "train")
    assert result["state"] == "Succeeded"
    # The recreated pod's restartCount starts at 0 again: only the watch saw the slot's pod replaced.
    assert result["restart_count"] == 0
    assert (result["recreations"], result["recreation_count"]) == ({"Worker": 1}, 1)


def test_a_retryable_failure_gets_a_fresh_tfjob_on_the_next_try(cluster: Any, dags_folder: Path) -> None:
    outcome = run_dag(
        load_dag(write_dag_file(dags_folder, "retry_fresh_tfjob", RETRY_DAG), "retry_fresh_tfjob")
    )
    assert (outcome.task("train").state, outcome.task("train").try_number) == ("success", 2)
    name = xcom_value(outcome, "train", "tfjob_name")
    api = sync_api_client(cluster)
    try:
        tfjob = client.CustomObjectsApi(api).get_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "tfjobs", name
        )
    finally:
        api.close()
    assert tfjob["metadata"]["annotations"][ANNOTATION_TRY_NUMBER] == "2"  # try 1's job was replaced
    assert tfjob["metadata"]["uid"] == xcom_value(outcome, "train", "tfjob_uid")
    assert xcom_value(outcome, "train")["uid"] == tfjob["metadata"]["uid"]
