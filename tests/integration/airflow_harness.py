"""Run real Airflow DAGs in the test process with ``dag.test()``.

Airflow 3's ``dag.test()`` only runs DAGs that it can find in a DAG bundle (it serialises
the bundle to the metadata DB first), so a test writes its DAG file into the session's
DAGs folder and runs it from there.  Deferrable tasks run their trigger inline, in this
process, exactly as ``airflow dags test`` does.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def migrate_airflow_db() -> None:
    """Create the temporary metadata DB (``airflow db migrate``) in a child process.

    A child process keeps the migration's logging and engine set-up out of the test process.
    """
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        check=True,
        capture_output=True,
        timeout=300,
    )


@dataclass(frozen=True)
class TaskOutcome:
    """What a test needs to know about one task instance after a run."""

    state: str | None
    try_number: int
    max_tries: int


@dataclass(frozen=True)
class RunOutcome:
    """The end state of a DAG run and its task instances, keyed ``task_id`` (``task_id[i]`` if mapped)."""

    dag_id: str
    run_id: str
    state: str
    tasks: dict[str, TaskOutcome]

    def task(self, task_id: str) -> TaskOutcome:
        return self.tasks[task_id]


def write_dag_file(dags_folder: Path, name: str, source: str) -> Path:
    """Write a DAG module into the DAGs folder (dedented) and return its path."""
    path = dags_folder / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


def load_dag(path: Path, dag_id: str) -> Any:
    """Import a DAG file as a fresh module and return the DAG object called ``dag_id``."""
    spec = importlib.util.spec_from_file_location(f"_test_dag_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for value in vars(module).values():
        if getattr(value, "dag_id", None) == dag_id and hasattr(value, "test"):
            return value
    raise LookupError(f"{path} defines no DAG {dag_id!r}")


def run_dag(dag: Any, **test_kwargs: Any) -> RunOutcome:
    """Run ``dag.test(**test_kwargs)`` and collect the outcome from the metadata DB."""
    from airflow.utils.session import create_session

    dag_run = dag.test(**test_kwargs)
    with create_session() as session:
        from airflow.models.taskinstance import TaskInstance

        tis = (
            session.query(TaskInstance)
            .filter(TaskInstance.dag_id == dag.dag_id, TaskInstance.run_id == dag_run.run_id)
            .all()
        )
        tasks = {
            (ti.task_id if ti.map_index < 0 else f"{ti.task_id}[{ti.map_index}]"): TaskOutcome(
                state=str(ti.state) if ti.state is not None else None,
                try_number=ti.try_number,
                max_tries=ti.max_tries,
            )
            for ti in tis
        }
    state = str(dag_run.state)
    return RunOutcome(dag_id=dag.dag_id, run_id=dag_run.run_id, state=state, tasks=tasks)


def xcom_value(outcome: RunOutcome, task_id: str, key: str = "return_value", map_index: int = -1) -> Any:
    """The XCom ``key`` a task instance of the run pushed (deserialised), or None when absent."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = (
            session.query(XComModel)
            .filter(
                XComModel.dag_id == outcome.dag_id,
                XComModel.run_id == outcome.run_id,
                XComModel.task_id == task_id,
                XComModel.key == key,
                XComModel.map_index == map_index,
            )
            .one_or_none()
        )
        return None if row is None else XComModel.deserialize_value(row)


def start_dag_in_child(
    path: Path, dag_id: str, *, logical_date: Any, output: Path
) -> subprocess.Popen[bytes]:
    """Run ``dag.test(logical_date=…, run_after=…)`` in a child process (same AIRFLOW_HOME, same env).

    For tests that kill the process running a task mid-flight and then run the same task instance
    again in the test process: pass the same ``logical_date`` to :func:`run_dag` (as both
    ``logical_date`` and ``run_after``) to get the same run id.  The child's output goes to ``output``.
    """
    script = (
        "import sys, datetime\n"
        "from tests.integration.airflow_harness import load_dag, run_dag\n"
        f"moment = datetime.datetime.fromisoformat({logical_date.isoformat()!r})\n"
        f"run_dag(load_dag(__import__('pathlib').Path({str(path)!r}), {dag_id!r}), "
        "logical_date=moment, run_after=moment)\n"
    )
    with output.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).parents[2],
        )
