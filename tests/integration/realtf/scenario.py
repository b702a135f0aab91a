"""One real-TensorFlow TFJob through ``TFJobOperator`` and ``dag.test()``, and what it left behind.

A scenario is a DAG with one ``train`` task running ``example_dags/trainer --tensorflow`` in
every replica, a checkpoint directory shared by the replicas and by Airflow's tries, and failure
callbacks that keep each failed try's ``tfjob_failure`` XCom in a file (a retry clears the XComs
of the try before it).  :func:`run_scenario` runs it, optionally SIGKILLing one replica's process
from outside (the sandbox's ``kill_process`` fault) once the chief has checkpointed a given
step, and returns everything the assertions need.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client
from tfjob_sandbox.testing import sync_api_client

from tests.integration.airflow_harness import RunOutcome, load_dag, run_dag, write_dag_file, xcom_value
from tests.integration.realtf.conftest import TRAINER

DAG_SOURCE = """
from __future__ import annotations
import datetime, json
from pathlib import Path
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

FAILURES = Path({failures!r})


def keep_failure(context):
    ti = context["ti"]
    record = {{
        "try_number": ti.try_number,
        "failure": ti.xcom_pull(task_ids="train", key="tfjob_failure"),
        "exception": str(context.get("exception")),
    }}
    with FAILURES.open("a") as stream:
        stream.write(json.dumps(record) + "\\n")


with DAG({dag_id!r}, schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        job_name={job!r},
        retries={retries},
        image="tensorflow-cpu:2.21.0",
        command=[{python!r}, {trainer!r}],
        args={args!r},
        env={{"AIRFLOW_TRY_NUMBER": "{{{{ ti.try_number }}}}", "TF_CPP_MIN_LOG_LEVEL": "2"}},
        on_finish_action="keep",
        poll_interval=2,
        get_logs=False,
        on_retry_callback=keep_failure,
        on_failure_callback=keep_failure,
        **{replicas!r},
    )
"""


@dataclass
class ScenarioResult:
    """What a scenario run left: Airflow's outcome, each failed try's record, the final TFJob."""

    outcome: RunOutcome
    failures: list[dict[str, Any]]
    job: dict[str, Any] | None
    chief_log: str
    pods: dict[str, Any]
    seconds: float
    killed: str | None

    @property
    def task(self) -> Any:
        return self.outcome.task("train")

    def result(self) -> dict[str, Any] | None:
        return xcom_value(self.outcome, "train")


def replica(count: int, policy: str) -> dict[str, Any]:
    return {"replicas": count, "restart_policy": policy}


def _kill_when_step(
    sandbox: Any, progress: Path, step: int, pod: str, killed: list[str], done_running: threading.Event
) -> None:
    """SIGKILL ``pod``'s process once the chief's progress file says ``step`` steps are done."""
    while not done_running.is_set():
        try:
            done = json.loads(progress.read_text())["step"]
        except (OSError, ValueError, KeyError):
            done = 0
        if done >= step:
            sandbox.kill_process("default", pod)
            killed.append(pod)
            return
        done_running.wait(0.1)


def run_scenario(
    sandbox: Any,
    dags_folder: Path,
    tmp_path: Path,
    tf_python: Path,
    *,
    name: str,
    replicas: dict[str, Any],
    trainer_args: list[str],
    retries: int = 1,
    kill: tuple[str, int] | None = None,
) -> ScenarioResult:
    """Run the scenario DAG ``name``; ``kill=(replica, step)`` SIGKILLs ``<name>-<replica>`` (e.g.
    ``ps-0``) from outside once the chief has finished ``step`` steps — on the first try only."""
    checkpoints = tmp_path / "checkpoints"
    failures = tmp_path / "failures.jsonl"
    source = DAG_SOURCE.format(
        dag_id=name,
        job=name,
        retries=retries,
        python=str(tf_python),
        trainer=str(TRAINER),
        args=["--tensorflow", "--checkpoint-dir", str(checkpoints), *trainer_args],
        replicas=replicas,
        failures=str(failures),
    )
    dag = load_dag(write_dag_file(dags_folder, name, source), name)
    killed: list[str] = []
    done_running = threading.Event()
    killer = None
    if kill is not None:
        pod = f"{name}-{kill[0]}"
        progress = checkpoints / "chief-0.json"
        killer = threading.Thread(
            target=_kill_when_step,
            args=(sandbox, progress, kill[1], pod, killed, done_running),
            daemon=True,
        )
        killer.start()
    started = time.monotonic()
    try:
        outcome = run_dag(dag)
    finally:
        done_running.set()
        if killer is not None:
            killer.join(10)
    seconds = time.monotonic() - started
    records = [json.loads(line) for line in failures.read_text().splitlines()] if failures.exists() else []
    api = sync_api_client(sandbox)
    try:
        try:
            job = client.CustomObjectsApi(api).get_namespaced_custom_object(
                "kubeflow.org", "v1", "default", "tfjobs", name
            )
        except client.ApiException as error:
            if error.status != 404:
                raise
            job = None  # a failed TFJob with replicas still running is deleted by the task
        core = client.CoreV1Api(api)
        pods = {
            pod.metadata.name: pod
            for pod in core.list_namespaced_pod(
                "default", label_selector=f"training.kubeflow.org/job-name={name}"
            ).items
        }
        chief = f"{name}-chief-0"
        chief_log = (
            str(core.read_namespaced_pod_log(chief, "default", container="tensorflow"))
            if chief in pods
            else ""
        )
    finally:
        api.close()
    return ScenarioResult(
        outcome=outcome,
        failures=records,
        job=job,
        chief_log=chief_log,
        pods=pods,
        seconds=seconds,
        killed=killed[0] if killed else None,
    )


def condition(job: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    """The TFJob's condition of ``kind`` (``Succeeded``, ``Failed``...) with status True, or {}."""
    for entry in ((job or {}).get("status") or {}).get("conditions") or []:
        if entry.get("type") == kind and entry.get("status") == "True":
            return dict(entry)
    return {}


def resumed_step(log: str) -> int | None:
    """The step a replica said it resumed at (``resuming from checkpoint at step K``), or None."""
    for line in log.splitlines():
        marker = "resuming from checkpoint at step "
        if marker in line:
            return int(line.split(marker, 1)[1].split()[0])
    return None
