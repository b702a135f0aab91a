"""One real-TensorFlow job through ``TFJobOperator`` and ``dag.test()``, and what it left behind.

The job is a TFJob (``backend="tfjob"``, the training operator) or a JobSet (``backend="jobset"``,
the JobSet and Job controllers); the DAG is the same but for that one argument.

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
        backend={backend!r},
        on_finish_action="keep",
        poll_interval=2,
        get_logs=False,
        on_retry_callback=keep_failure,
        on_failure_callback=keep_failure,
        **{replicas!r},
    )
"""


#: Where each backend's job lives, the label on its pods, and its condition names.
BACKENDS: dict[str, dict[str, str]] = {
    "tfjob": {
        "group": "kubeflow.org",
        "version": "v1",
        "plural": "tfjobs",
        "pod_label": "training.kubeflow.org/job-name",
        "succeeded": "Succeeded",
        "failed": "Failed",
    },
    "jobset": {
        "group": "jobset.x-k8s.io",
        "version": "v1alpha2",
        "plural": "jobsets",
        "pod_label": "jobset.sigs.k8s.io/jobset-name",
        "succeeded": "Completed",
        "failed": "Failed",
    },
}


@dataclass
class ScenarioResult:
    """What a scenario run left: Airflow's outcome, each failed try's record, the final job."""

    outcome: RunOutcome
    failures: list[dict[str, Any]]
    job: dict[str, Any] | None
    chief_log: str
    pods: dict[str, Any]
    seconds: float
    killed: str | None
    backend: str = "tfjob"

    def condition(self, kind: str) -> dict[str, Any]:
        """The final job's ``succeeded`` or ``failed`` condition, named as its backend names it."""
        return condition(self.job, BACKENDS[self.backend][kind])

    @property
    def task(self) -> Any:
        return self.outcome.task("train")

    def result(self) -> dict[str, Any] | None:
        return xcom_value(self.outcome, "train")


def replica(count: int, policy: str) -> dict[str, Any]:
    return {"replicas": count, "restart_policy": policy}


def replica_pod(sandbox: Any, backend: str, job: str, replica_id: str) -> str | None:
    """The name of the live pod of replica ``replica_id`` (``worker-1``) of ``job``, or None.

    A TFJob's pod is named after the replica; a JobSet's pod has the Job controller's random
    suffix, so it is found by its labels (replicated Job, completion index)."""
    if backend == "tfjob":
        return f"{job}-{replica_id}"
    replica_type, index = replica_id.rsplit("-", 1)
    selector = (
        f"jobset.sigs.k8s.io/jobset-name={job},jobset.sigs.k8s.io/replicatedjob-name={replica_type},"
        f"batch.kubernetes.io/job-completion-index={index}"
    )
    api = sync_api_client(sandbox)
    try:
        pods = client.CoreV1Api(api).list_namespaced_pod("default", label_selector=selector).items
    finally:
        api.close()
    live = [pod for pod in pods if pod.status.phase in ("Pending", "Running")]
    live.sort(key=lambda pod: pod.metadata.creation_timestamp)
    return live[-1].metadata.name if live else None


def _kill_when_step(
    sandbox: Any,
    backend: str,
    job: str,
    progress: Path,
    step: int,
    replica_id: str,
    killed: list[str],
    done_running: threading.Event,
) -> None:
    """SIGKILL the process of ``replica_id``'s pod once the chief's progress file says ``step``
    steps are done; ``killed`` receives the replica id."""
    while not done_running.is_set():
        try:
            done = json.loads(progress.read_text())["step"]
        except (OSError, ValueError, KeyError):
            done = 0
        if done >= step:
            pod = replica_pod(sandbox, backend, job, replica_id)
            if pod is not None:
                sandbox.kill_process("default", pod)
                killed.append(replica_id)
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
    backend: str = "tfjob",
) -> ScenarioResult:
    """Run the scenario DAG ``name`` on ``backend``; ``kill=(replica, step)`` SIGKILLs the pod of
    ``replica`` (e.g. ``ps-0``) from outside once the chief has finished ``step`` steps — on the
    first try only."""
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
        backend=backend,
    )
    dag = load_dag(write_dag_file(dags_folder, name, source), name)
    killed: list[str] = []
    done_running = threading.Event()
    killer = None
    if kill is not None:
        progress = checkpoints / "chief-0.json"
        killer = threading.Thread(
            target=_kill_when_step,
            args=(sandbox, backend, name, progress, kill[1], kill[0], killed, done_running),
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
    where = BACKENDS[backend]
    api = sync_api_client(sandbox)
    try:
        try:
            job = client.CustomObjectsApi(api).get_namespaced_custom_object(
                where["group"], where["version"], "default", where["plural"], name
            )
        except client.ApiException as error:
            if error.status != 404:
                raise
            job = None  # a failed job with replicas still running is deleted by the task
        core = client.CoreV1Api(api)
        listed = core.list_namespaced_pod("default", label_selector=f"{where['pod_label']}={name}").items
        pods = {pod.metadata.name: pod for pod in listed}
        chief = _chief_pod(listed, backend, name)
        chief_log = (
            str(core.read_namespaced_pod_log(chief, "default", container="tensorflow")) if chief else ""
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
        backend=backend,
    )


def _chief_pod(pods: list[Any], backend: str, name: str) -> str | None:
    """The chief's pod (the newest, on JobSet, where a replaced pod gets a new name), if kept."""
    if backend == "tfjob":
        chief = f"{name}-chief-0"
        return chief if any(pod.metadata.name == chief for pod in pods) else None
    chiefs = [
        pod
        for pod in pods
        if (pod.metadata.labels or {}).get("jobset.sigs.k8s.io/replicatedjob-name") == "chief"
    ]
    chiefs.sort(key=lambda pod: pod.metadata.creation_timestamp)
    return chiefs[-1].metadata.name if chiefs else None


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
