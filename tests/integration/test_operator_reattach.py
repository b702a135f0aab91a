"""The worker running ``execute`` dies mid-wait; the next run of the task instance adopts its TFJob.

The DAG runs in a child process that is SIGKILLed while the training runs (no ``on_kill``, no
cleanup: a lost worker).  Running the DAG again with the same logical date is the same task
instance: it must find the TFJob by its deterministic name, verify it by identity and UID, and
wait on it — one TFJob, same UID, never a duplicate.
"""

from __future__ import annotations

import datetime
import signal
import threading
from pathlib import Path
from typing import Any

from tfjob_sandbox.testing import wait_for

from tests.integration.airflow_harness import (
    load_dag,
    run_dag,
    start_dag_in_child,
    write_dag_file,
    xcom_value,
)
from tests.integration.cluster_queries import running_pods_of_dag, tfjobs_of_dag
from tfjob_provider.constants import ANNOTATION_TRY_NUMBER

#: Trains until the test drops a release file next to it.
WAIT_FOR_RELEASE = (
    "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\nprint('released')"
)

DAG_SOURCE = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("reattach_after_kill", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        image="python:3.11",
        command=["python", "-c", {script!r}, {release!r}],
        worker=1,
        deferrable={deferrable},
        on_finish_action="keep",
        poll_interval=1,
    )
"""


def test_a_killed_worker_s_tfjob_is_adopted_by_the_next_run(
    cluster: Any, dags_folder: Path, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    path = write_dag_file(
        dags_folder,
        "reattach_after_kill",
        DAG_SOURCE.format(script=WAIT_FOR_RELEASE, release=str(release), deferrable=False),
    )
    moment = datetime.datetime(2024, 6, 1, 12, 0, tzinfo=datetime.timezone.utc)
    child = start_dag_in_child(
        path, "reattach_after_kill", logical_date=moment, output=tmp_path / "child.log"
    )
    try:
        # The child's cold start (Airflow's import, its in-process execution API) took over 90 s at a
        # load average of 10 on 2 cores; a passing run waits 10-30 s.
        wait_for(
            lambda: running_pods_of_dag(cluster, "reattach_after_kill"), timeout=180, what="training running"
        )
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    (before,) = tfjobs_of_dag(cluster, "reattach_after_kill")

    rerun_started = datetime.datetime.now(datetime.timezone.utc)
    stop = threading.Event()

    def release_once_adopted() -> None:
        """Let training end only after the rerun has published the UID it decided to wait on."""
        from airflow.models.xcom import XComModel
        from airflow.utils.session import create_session

        while not stop.is_set():
            with create_session() as session:
                published = (
                    session.query(XComModel)
                    .filter(
                        XComModel.dag_id == "reattach_after_kill",
                        XComModel.key == "tfjob_uid",
                        XComModel.timestamp > rerun_started,
                    )
                    .first()
                )
            if published is not None:
                release.touch()
                return
            stop.wait(0.1)

    releaser = threading.Thread(target=release_once_adopted, daemon=True)
    releaser.start()
    try:
        outcome = run_dag(load_dag(path, "reattach_after_kill"), logical_date=moment, run_after=moment)
    finally:
        stop.set()
        release.touch()
    assert outcome.task("train").state == "success"
    assert outcome.run_id == "manual__2024-06-01T12:00:00+00:00"  # the same task instance
    (after,) = tfjobs_of_dag(cluster, "reattach_after_kill")  # one TFJob, never a duplicate
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["annotations"][ANNOTATION_TRY_NUMBER] == "1"  # submitted by the killed try
    assert xcom_value(outcome, "train", "tfjob_uid") == before["metadata"]["uid"]
    assert xcom_value(outcome, "train")["state"] == "Succeeded"
