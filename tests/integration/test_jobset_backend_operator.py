"""TFJobOperator(backend="jobset") and TFJobSensor(backend="jobset") end to end on the sandbox's
JobSet and Job controllers: the seed's situations as the TFJob tests run them
(tests/integration/test_operator_failures.py, test_operator_success.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.jobset_helpers import create_jobset, get_jobset
from tfjob_provider._jobset import tfjob_to_jobset
from tfjob_provider.manifest import build_tfjob

_SLEEP = "import time; time.sleep(60)"

SITUATIONS_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

def py(code):
    return ["python", "-c", code]

with DAG("{dag_id}", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    common = dict(backend="jobset", image="python:3.11", startup_timeout=60, timeout=90, retries=2)
    TFJobOperator(task_id="ps_success", command=py("print('trained')"), chief=1, worker=1,
                  ps={{"replicas": 1, "command": py({sleep!r})}}, deferrable={deferrable},
                  on_finish_action="keep", **common)
    TFJobOperator(task_id="worker_recovers", restart_policy="ExitCode", deferrable={deferrable},
                  command=py("import time; time.sleep(3); print('chief done')"), chief=1,
                  worker={{"replicas": 1, "command": py({recover!r})}}, **common)
    TFJobOperator(task_id="chief_error", command=py("raise SystemExit(1)"), chief=1,
                  worker={{"replicas": 1, "command": py({sleep!r})}}, deferrable={deferrable}, **common)
    TFJobOperator(task_id="ps_killed", command=py({sleep!r}), chief=1, restart_policy="Never",
                  ps={{"replicas": 1, "command": py("raise SystemExit(137)")}}, deferrable={deferrable},
                  **{{**common, "retries": 0}})
"""


def _recover(marker: Path) -> str:
    """A worker that is killed (137) the first time and trains the second (a new pod, same index)."""
    return (
        f"import os, sys, time; p = {str(marker)!r}\n"
        "if not os.path.exists(p):\n    open(p, 'w').close(); sys.exit(137)\n"
        "time.sleep(1); print('worker done')"
    )


def _run(dags_folder: Path, tmp_path: Path, *, deferrable: bool) -> Any:
    dag_id = f"jobset_situations_{'deferred' if deferrable else 'worker'}"
    source = SITUATIONS_DAG.format(
        dag_id=dag_id, deferrable=deferrable, sleep=_SLEEP, recover=_recover(tmp_path / "killed-once")
    )
    return run_dag(load_dag(write_dag_file(dags_folder, dag_id, source), dag_id))


def _check_situations(cluster: Any, outcome: Any) -> None:
    states = {task: (outcome.task(task).state, outcome.task(task).try_number) for task in outcome.tasks}
    assert states == {
        "ps_success": ("success", 1),
        "worker_recovers": ("success", 1),
        "chief_error": ("failed", 1),  # permanent: retries=2 are not used
        "ps_killed": ("failed", 1),
    }, states
    result = xcom_value(outcome, "ps_success")
    assert result["state"] == "Succeeded" and result["replicas"]["Chief"]["succeeded"] == 1
    assert xcom_value(outcome, "ps_success", "tfjob_backend") == "jobset"
    name = xcom_value(outcome, "ps_success", "tfjob_name")
    jobset = get_jobset(cluster, name)
    assert jobset is not None and jobset["metadata"]["uid"] == xcom_value(outcome, "ps_success", "tfjob_uid")
    assert [rjob["name"] for rjob in jobset["spec"]["replicatedJobs"]] == ["chief", "ps", "worker"]
    assert xcom_value(outcome, "ps_success", "tfjob_record")["status"] == "success"
    assert xcom_value(outcome, "worker_recovers")["state"] == "Succeeded"
    chief_error = xcom_value(outcome, "chief_error", "tfjob_failure")
    assert chief_error["retryable"] is False, chief_error
    assert any("chief" in culprit for culprit in chief_error["culprits"]), chief_error
    assert "exit" in chief_error["report"].lower()
    ps_killed = xcom_value(outcome, "ps_killed", "tfjob_failure")
    assert ps_killed["retryable"] is True, ps_killed
    assert any("-ps-" in culprit for culprit in ps_killed["culprits"]), ps_killed
    for task in ("chief_error", "ps_killed"):  # never leave training running
        left = get_jobset(cluster, xcom_value(outcome, task, "tfjob_name"))
        assert left is None or left["metadata"].get("deletionTimestamp") or _finished(left), task


def _finished(jobset: dict[str, Any]) -> bool:
    return any(
        condition.get("type") in ("Completed", "Failed") and condition.get("status") == "True"
        for condition in (jobset.get("status") or {}).get("conditions") or []
    )


def test_the_seeds_situations_in_the_worker(cluster: Any, dags_folder: Path, tmp_path: Path) -> None:
    outcome = _run(dags_folder, tmp_path, deferrable=False)
    _check_situations(cluster, outcome)
    # The TFJob tab's live read of a JobSet task: the JobSet as its TFJob view.
    from tfjob_provider.hooks.tfjob import TFJobHook
    from tfjob_provider.ui.reads import read_live

    client = TFJobHook().client
    name = xcom_value(outcome, "ps_success", "tfjob_name")
    live = client.run(read_live(client.session, name, "default", backend="jobset"))
    assert live.tfjob is not None and live.tfjob["metadata"]["uid"] == xcom_value(
        outcome, "ps_success", "tfjob_uid"
    )
    assert {"type": "Succeeded", "status": "True"} in live.tfjob["status"]["conditions"]
    assert any(pod["metadata"]["name"].startswith(f"{name}-chief-0-0-") for pod in live.pods), live.pods


def test_the_seeds_situations_deferred(cluster: Any, dags_folder: Path, tmp_path: Path) -> None:
    _check_situations(cluster, _run(dags_folder, tmp_path, deferrable=True))


REFUSED_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("jobset_refused", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(task_id="train", backend="jobset", image="python:3.11", worker=2,
                  enable_dynamic_worker=True, retries=2)
"""


def test_a_refused_manifest_fails_before_any_request(cluster: Any, dags_folder: Path) -> None:
    dag = load_dag(write_dag_file(dags_folder, "jobset_refused", REFUSED_DAG), "jobset_refused")
    cluster.reset_request_counts()
    outcome = run_dag(dag)
    requests = cluster.request_total(resource="jobsets")
    task = outcome.task("train")
    assert (task.state, task.try_number) == ("failed", 1), "a refusal is permanent: no retry"
    assert requests == 0, "not one request about JobSets: no get, no create"


SENSOR_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.sensors.tfjob import TFJobSensor

with DAG("jobset_sensor", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobSensor(task_id="poke", job_name={name!r}, backend="jobset", poke_interval=0.5, timeout=60)
    TFJobSensor(task_id="deferred", job_name={name!r}, backend="jobset", deferrable=True, timeout=60)
"""


def test_the_sensor_waits_for_a_jobset_submitted_elsewhere(cluster: Any, dags_folder: Path) -> None:
    name = "external-jobset"
    code = "import time; time.sleep(2); print('trained')"
    manifest = build_tfjob(
        name=name, namespace="default", image="python:3.11", command=["python", "-c", code], chief=1
    )
    create_jobset(cluster, tfjob_to_jobset(manifest))
    path = write_dag_file(dags_folder, "jobset_sensor", SENSOR_DAG.format(name=name))
    outcome = run_dag(load_dag(path, "jobset_sensor"))
    for task_id in ("poke", "deferred"):
        assert outcome.task(task_id).state == "success", task_id
        assert xcom_value(outcome, task_id)["state"] == "Succeeded"
        assert xcom_value(outcome, task_id, "tfjob_name") == name


TASKFLOW_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import dag, task


@dag(dag_id="jobset_taskflow", schedule=None, start_date=datetime.datetime(2024, 1, 1))
def pipeline():
    @task.tfjob(backend="jobset", image="python:3.11", interpreter={python!r}, chief=1, worker=2,
                restart_policy="ExitCode", retries=2)
    def train(steps: int) -> dict:
        import json
        import os

        config = json.loads(os.environ["TF_CONFIG"])
        return {{"steps": steps, "task": config["task"], "workers": config["cluster"]["worker"]}}

    train(25)


the_dag = pipeline()
"""


def test_the_decorator_runs_on_jobset_with_tf_config_as_the_training_operator_writes_it(
    cluster: Any, dags_folder: Path
) -> None:
    import sys

    source = TASKFLOW_DAG.format(python=sys.executable)
    outcome = run_dag(load_dag(write_dag_file(dags_folder, "jobset_taskflow", source), "jobset_taskflow"))
    assert outcome.task("train").state == "success"
    value = xcom_value(outcome, "train")
    assert value["steps"] == 25 and value["task"] == {"type": "chief", "index": 0}, value
    name = xcom_value(outcome, "train", "tfjob_name")
    assert value["workers"] == [f"{name}-worker-0-0.{name}:2222", f"{name}-worker-0-1.{name}:2222"]


ADOPT_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("jobset_adopt", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(task_id="train", backend="jobset", image="python:3.11", chief=1,
                  command=["python", "-c", "print('never run: the earlier JobSet is adopted')"])
"""


def test_the_jobset_an_earlier_try_submitted_is_adopted_not_duplicated(
    cluster: Any, dags_folder: Path
) -> None:
    import datetime

    from tfjob_provider.naming import job_name_for, stamp_identity

    moment = datetime.datetime(2024, 6, 1, 12, 0, tzinfo=datetime.timezone.utc)
    run_id = "manual__2024-06-01T12:00:00+00:00"
    identity = dict(dag_id="jobset_adopt", task_id="train", run_id=run_id, map_index=-1)
    name = job_name_for(**identity)
    code = "import time; time.sleep(2); print('trained by try 1')"
    tfjob = build_tfjob(name=name, image="python:3.11", command=["python", "-c", code], chief=1)
    earlier = create_jobset(
        cluster,
        tfjob_to_jobset(stamp_identity(tfjob, name=name, namespace="default", try_number=1, **identity)),
    )
    path = write_dag_file(dags_folder, "jobset_adopt", ADOPT_DAG)
    outcome = run_dag(load_dag(path, "jobset_adopt"), logical_date=moment, run_after=moment)
    assert outcome.run_id == run_id
    assert outcome.task("train").state == "success"
    assert xcom_value(outcome, "train", "tfjob_uid") == earlier["metadata"]["uid"]
    assert xcom_value(outcome, "train")["state"] == "Succeeded"
