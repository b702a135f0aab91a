"""TFJobSensor on TFJobs submitted outside Airflow, in its poke, reschedule and deferrable modes.

A TFJob that does not exist yet is waited for: each job here is created only once its sensor is
already waiting (running, deferred or up for reschedule).  Failures map to the same exceptions as
the operator's, ``soft_fail`` turns every negative ending into a skip, and ``timeout`` applies.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from tfjob_sandbox.testing import unique_name

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.trigger_helpers import delete_tfjob, submit_tfjob

MODES_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.sensors.tfjob import TFJobSensor

with DAG("sensor_modes", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobSensor(task_id="poke", job_name={names[poke]!r}, poke_interval=0.5, timeout=60)
    TFJobSensor(task_id="reschedule", job_name={names[reschedule]!r}, mode="reschedule", poke_interval=1,
                timeout=60)
    TFJobSensor(task_id="deferrable", job_name={names[deferrable]!r}, deferrable=True, poke_interval=1,
                timeout=60)
"""

FAILURES_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.sensors.tfjob import TFJobSensor

with DAG("sensor_failures", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobSensor(task_id="failed_job", job_name={failed!r}, retries=2, poke_interval=0.5, timeout=120)
    TFJobSensor(task_id="failed_job_soft", job_name={failed!r}, soft_fail=True, poke_interval=0.5,
                timeout=120)
    TFJobSensor(task_id="never_submitted", job_name={missing!r}, retries=2, deferrable=True, timeout=3,
                poke_interval=1)
    TFJobSensor(task_id="never_submitted_soft", job_name={missing!r}, soft_fail=True, timeout=3,
                poke_interval=1)
"""


def sensor_is_waiting(dag_id: str, task_id: str) -> bool:
    """Whether the sensor task has started waiting: poking, up for reschedule, or deferred (which
    ``dag.test()`` shows as queued with a ``next_method``, while it runs the trigger inline)."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        ti = session.query(TaskInstance).filter_by(dag_id=dag_id, task_id=task_id).one_or_none()
        if ti is None or ti.state is None:
            return False
        state = str(ti.state)
        return state in ("running", "deferred", "up_for_reschedule") or (
            state == "queued" and ti.next_method is not None
        )


def submit_once_waiting(names: dict[str, str], stop: threading.Event) -> None:
    """Create each sensor's TFJob only after that sensor has started waiting for it."""
    pending = dict(names)
    while pending and not stop.is_set():
        for task_id, name in list(pending.items()):
            if sensor_is_waiting("sensor_modes", task_id):
                time.sleep(1.5)  # a few pokes (or a deferral) on a TFJob that does not exist
                submit_tfjob(name, command=["python", "-c", "print('trained')"])
                del pending[task_id]
        stop.wait(0.1)


def test_each_mode_waits_for_a_tfjob_submitted_later_and_returns_its_result(
    cluster: Any, dags_folder: Path
) -> None:
    names = {mode: unique_name(f"ext-{mode}") for mode in ("poke", "reschedule", "deferrable")}
    path = write_dag_file(dags_folder, "sensor_modes", MODES_DAG.format(names=names))
    stop = threading.Event()
    submitter = threading.Thread(target=submit_once_waiting, args=(names, stop), daemon=True)
    submitter.start()
    try:
        outcome = run_dag(load_dag(path, "sensor_modes"))
    finally:
        stop.set()
        submitter.join(10)
    assert {task: outcome.task(task).state for task in outcome.tasks} == dict.fromkeys(names, "success")
    for mode, name in names.items():
        result = xcom_value(outcome, mode)
        assert (result["name"], result["state"]) == (name, "Succeeded")
        assert result["uid"] == xcom_value(outcome, mode, "tfjob_uid")
        delete_tfjob(name)


def test_failures_and_timeouts_fail_or_skip_like_the_operator(cluster: Any, dags_folder: Path) -> None:
    failed, missing = unique_name("ext-failed"), unique_name("ext-missing")
    submit_tfjob(failed, command=["python", "-c", "print('bad data'); raise SystemExit(2)"])
    path = write_dag_file(dags_folder, "sensor_failures", FAILURES_DAG.format(failed=failed, missing=missing))
    try:
        outcome = run_dag(load_dag(path, "sensor_failures"))
    finally:
        delete_tfjob(failed)
    assert {task: (outcome.task(task).state, outcome.task(task).try_number) for task in outcome.tasks} == {
        "failed_job": ("failed", 1),  # permanent (exit code 2): retries not burnt
        "failed_job_soft": ("skipped", 1),
        "never_submitted": ("failed", 1),  # AirflowSensorTimeout is not retried
        "never_submitted_soft": ("skipped", 1),
    }
    failure = xcom_value(outcome, "failed_job", "tfjob_failure")
    assert (failure["reason"], failure["retryable"]) == ("PermanentExitCode", False)
    assert "\n    | bad data" in failure["report"]
