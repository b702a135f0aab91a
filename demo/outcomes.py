"""What Airflow recorded about a demo run: task states and tries, XComs, and the verdicts in the task log.

Why read SQLite directly instead of through Airflow: each DAG of the demo runs in its own copy of
the metadata DB (SQLite allows a single writer, and the DAGs run side by side), and Airflow's ORM
binds one database per process at import time.  Plain ``sqlite3`` reads any number of them in
milliseconds.  Only long-stable columns are read (``task_instance.state/try_number/max_tries``,
``xcom.value`` as JSON, ``dag_run.state``); the demo test fails loudly if a future Airflow moves
them.

A failed task has no ``return_value``; its verdict is in the exception the operator raised,
which ``airflow dags test`` prints: ``… failed: <message> [<Reason>, permanent|retryable]``.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: XCom keys the provider's tasks push (``tfjob_provider.links`` /
#: ``tfjob_provider._airflow.carrying_out``), spelled out here so the demo process never imports
#: Airflow (importing it would configure an Airflow home from the user's environment); a test
#: checks they match.
XCOM_TFJOB_NAME = "tfjob_name"
XCOM_TFJOB_FAILURE = "tfjob_failure"


@dataclass(frozen=True)
class TaskRecord:
    """A task instance at the end of the run."""

    task_id: str
    state: str | None
    try_number: int
    max_tries: int


@dataclass(frozen=True)
class RunRecord:
    """One DAG run and its task instances."""

    dag_id: str
    run_id: str
    state: str | None
    tasks: dict[str, TaskRecord]


@dataclass(frozen=True)
class LoggedVerdict:
    """A failure verdict as the task's exception stated it."""

    job: str
    namespace: str
    reason: str
    kind: str  # "permanent" or "retryable"
    message: str
    exception: str  # "AirflowFailException" or "AirflowException"


_FAILURE = re.compile(
    r"(?P<exception>AirflowFailException|AirflowException): "
    r"(?P<message>TFJob (?P<namespace>[a-z0-9-]+)/(?P<job>[a-z0-9-]+) .*?) "
    r"\[(?P<reason>\w+), (?P<kind>permanent|retryable)\]$"
)


def _connect(database: Path) -> contextlib.closing[sqlite3.Connection]:
    """A read-only connection, closed at the end of the ``with`` block (a bare sqlite3 connection
    used as a context manager only commits or rolls back)."""
    return contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True))


def read_run(database: Path, dag_id: str) -> RunRecord | None:
    """The latest run of ``dag_id`` in the metadata DB at ``database``, or None."""
    with _connect(database) as connection:
        row = connection.execute(
            "SELECT run_id, state FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", (dag_id,)
        ).fetchone()
        if row is None:
            return None
        run_id, state = row
        tasks = {
            task_id: TaskRecord(
                task_id=task_id, state=task_state, try_number=int(tries), max_tries=int(max_tries)
            )
            for task_id, task_state, tries, max_tries in connection.execute(
                "SELECT task_id, state, try_number, max_tries FROM task_instance "
                "WHERE dag_id = ? AND run_id = ? AND map_index = -1",
                (dag_id, run_id),
            )
        }
    return RunRecord(dag_id=dag_id, run_id=str(run_id), state=state, tasks=tasks)


def read_xcom(database: Path, *, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
    """The JSON value of one XCom (None when absent)."""
    with _connect(database) as connection:
        row = connection.execute(
            "SELECT value FROM xcom "
            "WHERE dag_id = ? AND run_id = ? AND task_id = ? AND key = ? AND map_index = -1",
            (dag_id, run_id, task_id, key),
        ).fetchone()
    if row is None or row[0] is None:
        return None
    value = row[0]
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def logged_failures(log_text: str) -> list[LoggedVerdict]:
    """Every failure verdict the operator or sensor raised, in the order of the log."""
    verdicts = []
    for line in log_text.splitlines():
        match = _FAILURE.search(line.strip())
        if match:
            verdicts.append(
                LoggedVerdict(
                    job=match["job"],
                    namespace=match["namespace"],
                    reason=match["reason"],
                    kind=match["kind"],
                    message=match["message"],
                    exception=match["exception"],
                )
            )
    return verdicts


@dataclass(frozen=True)
class ConsumedEvent:
    """An asset event a DagRun was started by: where it came from and its ``extra``."""

    source_dag_id: str | None
    source_run_id: str | None
    source_task_id: str | None
    extra: dict[str, Any]


@dataclass(frozen=True)
class TriggeredRun:
    """The latest run of an asset-scheduled DAG, the events it consumed and one task's result."""

    dag_id: str
    run_id: str
    run_type: str
    task_state: str | None
    consumed: list[ConsumedEvent]
    result: Any


def read_triggered_run(database: Path, *, dag_id: str, task_id: str) -> TriggeredRun | None:
    """The latest run of ``dag_id``, its consumed asset events and ``task_id``'s state and result."""
    with _connect(database) as connection:
        row = connection.execute(
            "SELECT id, run_id, run_type FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", (dag_id,)
        ).fetchone()
        if row is None:
            return None
        run_pk, run_id, run_type = row
        consumed = [
            ConsumedEvent(source_dag_id, source_run_id, source_task_id, _json(extra))
            for source_dag_id, source_run_id, source_task_id, extra in connection.execute(
                "SELECT e.source_dag_id, e.source_run_id, e.source_task_id, e.extra "
                "FROM dagrun_asset_event AS d JOIN asset_event AS e ON e.id = d.event_id "
                "WHERE d.dag_run_id = ? ORDER BY e.id",
                (run_pk,),
            )
        ]
        state = connection.execute(
            "SELECT state FROM task_instance "
            "WHERE dag_id = ? AND run_id = ? AND task_id = ? AND map_index = -1",
            (dag_id, run_id, task_id),
        ).fetchone()
    result = read_xcom(database, dag_id=dag_id, run_id=str(run_id), task_id=task_id)
    return TriggeredRun(
        dag_id=dag_id,
        run_id=str(run_id),
        run_type=str(run_type),
        task_state=state[0] if state else None,
        consumed=consumed,
        result=result,
    )


def _json(value: Any) -> dict[str, Any]:
    parsed = json.loads(value) if isinstance(value, (str, bytes)) else value
    return parsed if isinstance(parsed, dict) else {}
