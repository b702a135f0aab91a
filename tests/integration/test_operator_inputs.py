"""What the operator is given: a templated YAML file, typed parameters, bad input, the extra link.

Bad input must fail the task for good (no retries) with the field and the fix named, *before any
request reaches the cluster* — proven by an API fault rule that would answer every request with
503 and still has ``fired == 0`` afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client
from tfjob_sandbox.testing import sync_api_client

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.cluster_queries import pods_of_job, tfjobs_of_dag
from tests.integration.trigger_helpers import delete_tfjob
from tfjob_provider.links import TFJobLink

TEMPLATED_MANIFEST = """\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: ignored-in-favour-of-the-deterministic-name
  labels:
    run-date: "{{ ds }}"
spec:
  runPolicy:
    cleanPodPolicy: None
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: python:3.11
              command: ["python", "-c", "print('date={{ ds }} lr={{ params.learning_rate }}')"]
"""

TEMPLATED_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("templated_yaml", schedule=None, start_date=datetime.datetime(2024, 1, 1),
         params={"learning_rate": "0.003"}) as dag:
    TFJobOperator(
        task_id="train",
        tfjob="templated_tfjob.yaml",
        on_finish_action="keep",
        poll_interval=1,
        dashboard_url_template="https://dashboard.example.com/tfjobs/{namespace}/{name}?uid={uid}",
    )
    TFJobOperator(
        task_id="fire_and_forget",
        image="python:3.11",
        command=["python", "-c", "import time; time.sleep(30)"],
        worker=1,
        wait_for_completion=False,
    )
"""

BAD_INPUT_DAG = """
from __future__ import annotations
import datetime
from pathlib import Path
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

def remember_error(context):
    Path({errors!r}).joinpath(context["ti"].task_id).write_text(
        type(context["exception"]).__name__ + ": " + str(context["exception"]))

MANIFEST = {{
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {{"name": "x"}},
    "spec": {{"tfReplicaSpecs": {{"Worker": {{
        "replicas": 1,
        "restartpolicy": "Never",
        "template": {{"spec": {{"containers": [{{"name": "tensorflow", "image": "python:3.11"}}]}}}},
    }}}}}},
}}

with DAG("bad_input", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    common = dict(retries=2, on_failure_callback=remember_error)
    TFJobOperator(task_id="misspelt_field", tfjob=MANIFEST, **common)
    typo = {{"fail_on_worker_falure": True}}
    TFJobOperator(task_id="rules_typo", image="python:3.11", rules=typo, **common)
    TFJobOperator(task_id="replicas_not_a_number", image="python:3.11", worker="two", **common)
    TFJobOperator(task_id="namespace_mismatch", tfjob=dict(MANIFEST, metadata={{"namespace": "a"}}),
                  namespace="b", **common)
"""


def test_a_templated_yaml_file_is_rendered_submitted_and_linked(cluster: Any, dags_folder: Path) -> None:
    (dags_folder / "templated_tfjob.yaml").write_text(TEMPLATED_MANIFEST)
    path = write_dag_file(dags_folder, "templated_yaml", TEMPLATED_DAG)
    import datetime

    moment = datetime.datetime(2025, 3, 14, tzinfo=datetime.timezone.utc)
    outcome = run_dag(load_dag(path, "templated_yaml"), logical_date=moment, run_after=moment)
    assert outcome.task("train").state == "success"
    name, uid = xcom_value(outcome, "train", "tfjob_name"), xcom_value(outcome, "train", "tfjob_uid")
    assert name.startswith("templated-yaml-train-")  # the manifest's own name was replaced
    (job,) = [job for job in tfjobs_of_dag(cluster, "templated_yaml") if job["metadata"]["name"] == name]
    assert job["metadata"]["labels"]["run-date"] == "2025-03-14"
    (pod,) = pods_of_job(cluster, name)
    api = sync_api_client(cluster)
    try:
        response = client.CoreV1Api(api).read_namespaced_pod_log(
            pod.metadata.name, "default", container="tensorflow", _preload_content=False
        )
        log = response.data.decode()
    finally:
        api.close()
    assert log.strip() == "date=2025-03-14 lr=0.003"
    link = f"https://dashboard.example.com/tfjobs/default/{name}?uid={uid}"
    assert xcom_value(outcome, "train", TFJobLink().xcom_key) == link

    assert outcome.task("fire_and_forget").state == "success"
    submitted = xcom_value(outcome, "fire_and_forget")
    assert submitted["state"] in ("Pending", "Running")  # returned right after submission
    delete_tfjob(submitted["name"])


def test_bad_input_fails_for_good_before_any_request_reaches_the_cluster(
    own_cluster: Any, dags_folder: Path, tmp_path: Path
) -> None:
    errors = tmp_path / "errors"
    errors.mkdir()
    tripwire = own_cluster.api_fault("status", status=503)  # would answer every request
    path = write_dag_file(dags_folder, "bad_input", BAD_INPUT_DAG.format(errors=str(errors)))
    outcome = run_dag(load_dag(path, "bad_input"))
    (rule,) = [rule for rule in own_cluster.faults.rules() if rule["id"] == tripwire]
    assert rule["fired"] == 0
    assert {
        task: (outcome.task(task).state, outcome.task(task).try_number) for task in outcome.tasks
    } == dict.fromkeys(
        ("misspelt_field", "rules_typo", "replicas_not_a_number", "namespace_mismatch"), ("failed", 1)
    )
    said = {path.name: path.read_text() for path in errors.iterdir()}
    assert all(text.startswith("AirflowFailException: ") for text in said.values()), said
    assert "restartpolicy" in said["misspelt_field"] and "restartPolicy" in said["misspelt_field"]
    assert "fail_on_worker_falure" in said["rules_typo"] and "fail_on_worker_failure" in said["rules_typo"]
    assert (
        "worker: must be a replica count" in said["replicas_not_a_number"]
        and "Fix: " in said["replicas_not_a_number"]
    )
    assert "metadata.namespace" in said["namespace_mismatch"]
