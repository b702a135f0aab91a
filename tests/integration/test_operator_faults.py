"""Faults of the cluster and of its API: a bad image fails fast for good; API trouble changes nothing.

* An image that cannot be pulled never starts — the training operator would wait forever; the
  task must fail at once, permanently (no retries burnt), long before ``startup_timeout``.
* A registry that rate limits or does not answer is waited out while the kubelet retries, up to
  ``Rules.image_pull_timeout``; past that the task fails *retryably* and Airflow retries it.
* 500s, 429s, connection resets, latency, dropped watches and expired watch history (forced 410
  relists) while the operator waits — in its worker and deferred — must not change the outcome.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tfjob_sandbox.testing import sync_api_client, unique_name, wait_for

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.cluster_queries import pods_of_job, tfjobs_of_dag
from tfjob_provider.constants import ANNOTATION_TASK_ID

IMAGE_PULL_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("image_pull_failure", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(task_id="train", retries=2, image={image!r}, command=["python", "-c", "pass"],
                  chief=1, worker=1, startup_timeout=600, poll_interval=1)
"""

TRANSIENT_PULL_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG({dag_id!r}, schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(task_id="train", retries={retries}, retry_delay=datetime.timedelta(seconds=0),
                  image={image!r}, command=["python", "-c", "pass"], chief=1, worker=1,
                  deferrable={deferrable}, startup_timeout=600, poll_interval=1, rules={rules!r},
                  on_finish_action="keep")
"""

FAULTS_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

WAIT = "import os, sys, time\\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)"

with DAG("api_faults", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    for mode in ("sync", "deferred"):
        release = {workdir!r} + "/" + mode
        TFJobOperator(
            task_id=mode,
            image="python:3.11",
            command=["python", "-c", WAIT, release],
            chief=1,
            worker=1,
            deferrable=(mode == "deferred"),
            on_finish_action="keep",
            poll_interval=1,
            timeout=180,  # a broken test must not hang the suite
        )
"""


def test_an_unpullable_image_fails_the_task_fast_and_for_good(cluster: Any, dags_folder: Path) -> None:
    image = f"registry.example.com/{unique_name('missing')}:1.0"
    cluster.set_image_unpullable(image)
    path = write_dag_file(dags_folder, "image_pull_failure", IMAGE_PULL_DAG.format(image=image))
    started = time.monotonic()
    outcome = run_dag(load_dag(path, "image_pull_failure"))
    assert time.monotonic() - started < 60  # not startup_timeout (600 s): the pull error decides
    assert (outcome.task("train").state, outcome.task("train").try_number) == ("failed", 1)
    failure = xcom_value(outcome, "train", "tfjob_failure")
    assert (failure["reason"], failure["retryable"]) == ("ImagePullFailed", False)
    assert "ImagePullBackOff" in failure["report"] or "ErrImagePull" in failure["report"]
    assert tfjobs_of_dag(cluster, "image_pull_failure") == []  # the operator would wait forever: deleted


def pull_warnings(sandbox: Any, job: dict[str, Any]) -> list[str]:
    """The kubelet's "Failed to pull image" event messages for the pods of ``job``."""
    api = sync_api_client(sandbox)
    try:
        core = client.CoreV1Api(api)
        return [
            event.message
            for pod in pods_of_job(sandbox, job["metadata"]["name"])
            for event in core.list_namespaced_event(
                "default", field_selector=f"involvedObject.name={pod.metadata.name}"
            ).items
            if event.reason == "Failed" and event.message.startswith("Failed to pull image")
        ]
    finally:
        api.close()


def test_a_rate_limited_registry_is_waited_out_and_the_job_succeeds(cluster: Any, dags_folder: Path) -> None:
    image = f"registry.example.com/{unique_name('busy')}:1.0"
    cluster.set_image_unpullable(image, cause="rate-limited", failures=3)  # the 4th pull works
    dag_id = "rate_limited_registry"
    source = TRANSIENT_PULL_DAG.format(dag_id=dag_id, retries=0, image=image, deferrable=True, rules=None)
    outcome = run_dag(load_dag(write_dag_file(dags_folder, dag_id, source), dag_id))
    assert (outcome.task("train").state, outcome.task("train").try_number) == ("success", 1)
    (job,) = tfjobs_of_dag(cluster, dag_id)
    warnings = pull_warnings(cluster, job)
    assert warnings and all("429 Too Many Requests" in message for message in warnings)


def test_a_registry_down_past_image_pull_timeout_fails_the_task_retryably(
    cluster: Any, dags_folder: Path
) -> None:
    image = f"registry.example.com/{unique_name('down')}:1.0"
    cluster.set_image_unpullable(image, cause="timeout")
    dag_id = "registry_down"
    source = TRANSIENT_PULL_DAG.format(
        dag_id=dag_id, retries=1, image=image, deferrable=False, rules={"image_pull_timeout": 3}
    )
    try:
        outcome = run_dag(load_dag(write_dag_file(dags_folder, dag_id, source), dag_id))
    finally:
        cluster.set_image_unpullable(image, False)
    # Retryable: Airflow ran the task a second time (which met the same outage) before giving up.
    assert (outcome.task("train").state, outcome.task("train").try_number) == ("failed", 2)
    failure = xcom_value(outcome, "train", "tfjob_failure")
    assert (failure["reason"], failure["retryable"]) == ("ImagePullFailed", True)
    assert "Rules.image_pull_timeout=3s" in failure["report"]
    assert "i/o timeout" in failure["report"]


def training_task(sandbox: Any, done: set[str]) -> str | None:
    """The task whose training runs now (both replicas Running) and was not stormed yet."""
    try:  # this test's own reads meet the injected faults too
        for job in tfjobs_of_dag(sandbox, "api_faults"):
            task = job["metadata"]["annotations"][ANNOTATION_TASK_ID]
            pods = pods_of_job(sandbox, job["metadata"]["name"])
            if task not in done and len(pods) == 2 and all(pod.status.phase == "Running" for pod in pods):
                return str(task)
    except ApiException:
        return None
    return None


def storm_each_wait(sandbox: Any, workdir: Path, stop: threading.Event) -> None:
    """For each task (in whatever order Airflow runs them): once its training runs, hit the API
    with every fault, then let it finish.  Count-limited faults keep any one request below the
    retry policy's five attempts."""
    done: set[str] = set()
    while len(done) < 2 and not stop.is_set():
        task_id = wait_for(lambda: training_task(sandbox, done), timeout=120, what="training running")
        time.sleep(0.5)  # let the waiter settle on its watch
        sandbox.fail_requests(500, count=2)
        sandbox.fail_requests(429, count=1, retry_after=1)
        sandbox.reset_connections(count=1)
        sandbox.add_latency(0.3, count=3)
        sandbox.drop_watches(abort=True)
        time.sleep(1.0)
        sandbox.expire_watch_history()
        sandbox.drop_watches()  # the resumes now get 410 Gone: relist
        time.sleep(1.5)
        (workdir / task_id).touch()
        done.add(task_id)


def test_api_faults_and_forced_relists_do_not_change_the_outcome(
    own_cluster: Any, dags_folder: Path, tmp_path: Path
) -> None:
    path = write_dag_file(dags_folder, "api_faults", FAULTS_DAG.format(workdir=str(tmp_path)))
    stop = threading.Event()
    storm = threading.Thread(target=storm_each_wait, args=(own_cluster, tmp_path, stop), daemon=True)
    storm.start()
    try:
        outcome = run_dag(load_dag(path, "api_faults"))
    finally:
        stop.set()
        for task_id in ("sync", "deferred"):
            (tmp_path / task_id).touch()
        storm.join(30)
    assert {task: (outcome.task(task).state, outcome.task(task).try_number) for task in outcome.tasks} == {
        "sync": ("success", 1),
        "deferred": ("success", 1),
    }
    jobs = tfjobs_of_dag(own_cluster, "api_faults")
    assert sorted(job["metadata"]["uid"] for job in jobs) == sorted(
        xcom_value(outcome, task, "tfjob_uid") for task in ("sync", "deferred")
    )  # one TFJob per task: no retry resubmitted anything
    assert all(xcom_value(outcome, task)["state"] == "Succeeded" for task in ("sync", "deferred"))
