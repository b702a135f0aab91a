"""API outages while a TFJob trains: ridden out within the outage budget, never a lost training.

The sandbox's API server is made unavailable for a stretch of time (every request answered 503
or 429 with ``Retry-After``, every connection reset, or every request delayed) and every open
watch is cut, so the waiter's reconnects meet the outage; the sandbox's own training operator
and kubelet keep working, so the TFJob can end before, during or after it — as on a real cluster
whose API server restarts.  Both modes (worker and deferred), through ``dag.test()``:

* within the budget (180 s by default) the task succeeds on try 1 with its one TFJob;
* a deferred sensor rides out an outage the same way (and never deletes);
* longer than the budget (set short through the connection's ``api_outage_budget`` extra) the
  try fails retryable, the TFJob that succeeded meanwhile is left in place — not deleted, not
  trained again — and the next try adopts it.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tfjob_sandbox.testing import unique_name, wait_for

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.cluster_queries import running_pods_of_dag, tfjobs_of_dag
from tfjob_provider.constants import ANNOTATION_TRY_NUMBER

pytestmark = pytest.mark.slow

#: Trains until the test drops a release file.
WAIT_FOR_RELEASE = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)"

DAG_SOURCE = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG({dag_id!r}, schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        image="python:3.11",
        command=["python", "-c", {script!r}, {release!r}],
        chief=1,
        worker=1,
        deferrable={deferrable},
        on_finish_action="keep",  # the TFJob must still be there to be counted
        poll_interval=1,
        retries={retries},
        retry_delay=datetime.timedelta(seconds={retry_delay}),
        timeout=300,  # a broken test must not hang the suite
    )
"""


@dataclass(frozen=True)
class Outage:
    """One scenario: how the API fails, for how long, and when the training ends."""

    name: str
    deferrable: bool
    kind: str  # "503", "429", "reset" or "latency"
    seconds: float
    ends: str  # "before", "during" or "after" the outage
    retry_after: int = 1


def run_with_outage(
    cluster: Any, dags_folder: Path, tmp_path: Path, outage: Outage, *, retries: int = 0, retry_delay: int = 0
) -> tuple[Any, int]:
    """Run the DAG; once its training runs, break the API as ``outage`` says and end the training
    at the chosen moment.  Returns the run's outcome and how many requests the outage answered."""
    dag_id = f"outage_{outage.name}"
    release = tmp_path / "release"
    source = DAG_SOURCE.format(
        dag_id=dag_id,
        script=WAIT_FOR_RELEASE,
        release=str(release),
        deferrable=outage.deferrable,
        retries=retries,
        retry_delay=retry_delay,
    )
    path = write_dag_file(dags_folder, dag_id, source)
    hit: list[int] = []
    failed: list[BaseException] = []
    started = time.monotonic()
    marks: dict[str, float] = {}

    def mark(what: str) -> None:
        marks[what] = round(time.monotonic() - started, 1)

    def break_the_api() -> None:
        try:
            wait_for(lambda: running_pods_of_dag(cluster, dag_id), timeout=120, what="training running")
            mark("training running")
            time.sleep(1.0)  # let the waiter settle on its watch
            if outage.ends == "before":
                release.touch()
                wait_for(lambda: succeeded(cluster, dag_id), timeout=60, what="the TFJob succeeded")
                mark("released")
            rule = cluster.api_outage(outage.seconds, kind=outage.kind, retry_after=outage.retry_after)
            cluster.drop_watches(abort=True)  # open streams would deliver the end despite the outage
            began = time.monotonic()
            mark("outage began")
            if outage.ends == "during":
                time.sleep(min(3.0, outage.seconds / 4))
                release.touch()
                mark("released")
            time.sleep(max(0.0, began + outage.seconds - time.monotonic()))
            mark("outage over")
            time.sleep(0.5)
            if "released" not in marks:
                release.touch()
                mark("released")
            hit.append(cluster.faults.fired(rule))
        except BaseException as error:  # reported by the test, not lost in a thread
            failed.append(error)
            release.touch()

    breaker = threading.Thread(target=break_the_api, daemon=True)
    breaker.start()
    try:
        outcome = run_dag(load_dag(path, dag_id))
        mark("task ended")
    finally:
        release.touch()
        breaker.join(outage.seconds + 180)
        cluster.clear_api_faults()
    print(f"{outage}: {marks}, {hit} requests failed by the outage")  # the measured timeline (-s)
    assert not failed, failed
    return outcome, hit[0]


def succeeded(cluster: Any, dag_id: str) -> bool:
    jobs = tfjobs_of_dag(cluster, dag_id)
    conditions = jobs[0].get("status", {}).get("conditions", []) if len(jobs) == 1 else []
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)


def the_one_tfjob(cluster: Any, outcome: Any, dag_id: str) -> dict[str, Any]:
    """The dag's only TFJob, submitted by try 1, the one the task reported; Succeeded."""
    (job,) = tfjobs_of_dag(cluster, dag_id)  # one TFJob: nothing deleted, nothing trained twice
    assert job["metadata"]["annotations"][ANNOTATION_TRY_NUMBER] == "1"
    assert job["metadata"]["uid"] == xcom_value(outcome, "train", "tfjob_uid")
    assert job["metadata"].get("deletionTimestamp") is None
    assert succeeded(cluster, dag_id)
    return job


WITHIN_BUDGET = [
    # The case: a deferred wait, 503 + Retry-After: 1 for 20 s, the job ending meanwhile.
    Outage("deferred_503_during", deferrable=True, kind="503", seconds=20, ends="during", retry_after=1),
    Outage("worker_429_during", deferrable=False, kind="429", seconds=20, ends="during", retry_after=5),
    # Shorter outages for the other kinds and moments: what matters there is the kind, not the length.
    Outage("deferred_resets_before", deferrable=True, kind="reset", seconds=8, ends="before"),
    Outage("worker_latency_after", deferrable=False, kind="latency", seconds=8, ends="after"),
    Outage("deferred_429_after", deferrable=True, kind="429", seconds=8, ends="after", retry_after=0),
]


@pytest.mark.parametrize("outage", WITHIN_BUDGET, ids=[outage.name for outage in WITHIN_BUDGET])
def test_an_outage_within_the_budget_changes_nothing(
    own_cluster: Any, dags_folder: Path, tmp_path: Path, outage: Outage
) -> None:
    outcome, hit = run_with_outage(own_cluster, dags_folder, tmp_path, outage)
    assert (outcome.task("train").state, outcome.task("train").try_number) == ("success", 1)
    assert xcom_value(outcome, "train")["state"] == "Succeeded"
    the_one_tfjob(own_cluster, outcome, f"outage_{outage.name}")
    if outage.ends != "before":
        assert hit > 0, "the waiter never met the outage"


def test_a_minute_long_outage_is_ridden_out(own_cluster: Any, dags_folder: Path, tmp_path: Path) -> None:
    outage = Outage("worker_503_60s", deferrable=False, kind="503", seconds=60, ends="during", retry_after=2)
    outcome, hit = run_with_outage(own_cluster, dags_folder, tmp_path, outage)
    assert (outcome.task("train").state, outcome.task("train").try_number) == ("success", 1)
    the_one_tfjob(own_cluster, outcome, "outage_worker_503_60s")
    assert hit > 0


def test_an_outage_longer_than_the_budget_leaves_the_tfjob_for_the_next_try(
    own_cluster: Any, dags_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = json.loads(own_cluster.airflow_conn_uri)
    connection["extra"]["api_outage_budget"] = 2  # seconds: the outage below lasts 12
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(connection))
    outage = Outage("deferred_503_past_budget", deferrable=True, kind="503", seconds=12, ends="during")
    started = datetime.datetime.now(datetime.timezone.utc)
    # Try 1 gives up within the outage (watch 2 s + fresh read 2 s); try 2 starts after it ended.
    outcome, hit = run_with_outage(own_cluster, dags_folder, tmp_path, outage, retries=1, retry_delay=14)
    assert (outcome.task("train").state, outcome.task("train").try_number) == ("success", 2)
    the_one_tfjob(own_cluster, outcome, "outage_deferred_503_past_budget")  # adopted, not trained again
    assert xcom_value(outcome, "train")["state"] == "Succeeded"
    assert hit > 0
    assert datetime.datetime.now(datetime.timezone.utc) - started < datetime.timedelta(seconds=120)


SENSOR_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.sensors.tfjob import TFJobSensor

with DAG("outage_sensor", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobSensor(task_id="wait", job_name={name!r}, deferrable=True, poke_interval=1, timeout=240)
"""


def test_a_deferred_sensor_rides_out_an_outage(cluster: Any, dags_folder: Path, tmp_path: Path) -> None:
    from tests.integration.test_sensor_external import sensor_is_waiting
    from tests.integration.trigger_helpers import delete_tfjob, submit_tfjob, tfjob_exists

    release = tmp_path / "release"
    name = unique_name("outage-sensor")
    uid = submit_tfjob(name, command=["python", "-c", WAIT_FOR_RELEASE, str(release)])
    path = write_dag_file(dags_folder, "outage_sensor", SENSOR_DAG.format(name=name))
    hit: list[int] = []

    def break_the_api() -> None:
        try:
            wait_for(lambda: sensor_is_waiting("outage_sensor", "wait"), timeout=120, what="sensor deferred")
            time.sleep(1.0)
            rule = cluster.api_outage(8, kind="503", retry_after=1)
            cluster.drop_watches(abort=True)
            time.sleep(2.0)
            release.touch()  # the job ends during the outage
            time.sleep(7.0)
            hit.append(cluster.faults.fired(rule))
        finally:
            release.touch()

    breaker = threading.Thread(target=break_the_api, daemon=True)
    breaker.start()
    try:
        outcome = run_dag(load_dag(path, "outage_sensor"))
    finally:
        release.touch()
        breaker.join(60)
        cluster.clear_api_faults()
    try:
        assert (outcome.task("wait").state, outcome.task("wait").try_number) == ("success", 1)
        assert (xcom_value(outcome, "wait")["uid"], xcom_value(outcome, "wait")["state"]) == (
            uid,
            "Succeeded",
        )
        assert tfjob_exists(name)  # the sensor never deletes
        assert hit and hit[0] > 0, "the sensor never met the outage"
    finally:
        delete_tfjob(name)
