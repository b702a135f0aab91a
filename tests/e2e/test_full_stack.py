"""The provider under the full Airflow stack: api-server, scheduler (LocalExecutor), dag-processor, triggerer.

Everything goes through the public interfaces: DAG runs are triggered and tasks marked failed
through the REST API (``/api/v2``, simple auth manager token), tasks run in the LocalExecutor's
supervised processes, deferred tasks wait in the real triggerer process, the cluster is the
sandbox CLI reached through ``kubernetes_default``.  An independent observer watches TFJobs and
pods, so "the TFJob was never deleted" and "one TFJob, same UID" are facts seen on the cluster,
not the provider's own account.

The fault tests use held TFJobs (``e2e_dags.py``): they train until the test creates the run's
stop file, so each fault is injected while the task is provably waiting.
"""

from __future__ import annotations

import functools
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from tfjob_sandbox.testing import wait_for as _wait_for

from demo.observer import TFJobRecord
from demo.processes import descendants
from tests.e2e.conftest import FullStack
from tfjob_provider.constants import ANNOTATION_TRY_NUMBER

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

WAIT = 180.0
#: Probes here call the REST API or read the observer: 5 a second is plenty.
eventually = functools.partial(_wait_for, interval=0.2)


def trigger_held(full_stack: FullStack, dag_id: str, *, second: int = 0) -> tuple[str, Path]:
    """Trigger a held DAG (``second`` tells runs of one DAG apart: one run per logical date)."""
    stop = full_stack.stop_file(f"{dag_id}-{second}")
    run_id = full_stack.airflow.rest.trigger(
        dag_id, logical_date=f"{full_stack.logical_date}T00:00:{second:02d}Z", conf={"stop_file": str(stop)}
    )
    return run_id, stop


def running_tfjob(full_stack: FullStack, dag_id: str, run_id: str) -> TFJobRecord:
    """Wait until the task's TFJob exists and its chief and worker pods run; return it."""
    rest, observer = full_stack.airflow.rest, full_stack.observer

    def name() -> str | None:
        value = rest.xcom(dag_id, run_id, "train", "tfjob_name")
        return str(value) if value else None

    job_name = eventually(name, timeout=WAIT, what=f"{dag_id}: the tfjob_name XCom")

    def running() -> TFJobRecord | None:
        jobs = observer.jobs_named(job_name)
        if not jobs:
            return None
        rows = observer.replica_rows(jobs[-1].uid)
        return jobs[-1] if len(rows) == 2 and all(row.phase == "Running" for row in rows) else None

    return eventually(running, timeout=WAIT, what=f"{dag_id}: chief and worker running")


def wait_for_trigger_started(full_stack: FullStack, dag_id: str, run_id: str, *, try_number: int = 1) -> None:
    """Wait until the triggerer has started this task's trigger (its trigger log says so).

    A task instance is ``deferred`` as soon as the worker hands over, but the triggerer picks the
    trigger up on its next loop; a fault injected in between would test nothing.
    """
    task_dir = full_stack.airflow.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / "task_id=train"

    def started() -> bool:
        return any(
            "starting" in path.read_text(errors="replace")
            for path in task_dir.glob(f"attempt={try_number}.log.trigger.*.log")
        )

    eventually(started, timeout=WAIT, what=f"{dag_id}: the triggerer to start the trigger")


def succeeds_with_the_one_tfjob(
    full_stack: FullStack, dag_id: str, run_id: str, job: TFJobRecord, *, try_number: int
) -> dict[str, Any]:
    """Wait for the task to end; it must succeed on ``try_number`` with ``job`` as its only TFJob,
    never deleted (adopted across tries, kept across triggerer restarts).  Returns the result XCom."""
    rest, observer = full_stack.airflow.rest, full_stack.observer
    ti = rest.wait_for_task(
        dag_id,
        run_id,
        "train",
        until=lambda ti: ti["state"] in ("success", "failed"),
        timeout=WAIT,
        what="the end",
    )
    assert (ti["state"], ti["try_number"]) == ("success", try_number)
    result = rest.xcom(dag_id, run_id, "train")
    assert result["uid"] == job.uid, "the task reported the TFJob it was watching from the start"
    seen = observer.jobs_named(job.name)
    assert [record.uid for record in seen] == [job.uid], "one TFJob, the same UID throughout"
    assert seen[0].deletion_seen_at is None, "the TFJob was never deleted"
    return dict(result)


@pytest.mark.parametrize("how", ["stopped", "crashed"])
def test_triggerer_restart_mid_wait_finishes_the_task_and_never_deletes_the_tfjob(
    full_stack: FullStack, how: str
) -> None:
    """``stopped``: SIGTERM, the triggerer cancels its triggers (the path a careless cleanup would
    delete on).  ``crashed``: SIGKILL to it and its children; the trigger moves to the new
    triggerer once the dead one's heartbeat is stale."""
    rest, observer, airflow = full_stack.airflow.rest, full_stack.observer, full_stack.airflow
    dag_id = "e2e_triggerer_restart"
    run_id, stop = trigger_held(full_stack, dag_id, second=0 if how == "stopped" else 1)
    rest.wait_for_task(
        dag_id, run_id, "train", until=lambda ti: ti["state"] == "deferred", timeout=WAIT, what="deferred"
    )
    job = running_tfjob(full_stack, dag_id, run_id)
    wait_for_trigger_started(full_stack, dag_id, run_id)

    if how == "stopped":
        airflow.stop("triggerer")
    else:
        airflow.crash("triggerer")
    try:
        assert not airflow.components["triggerer"].alive()
        # The job finishes while no triggerer is watching it.
        stop.touch()
        eventually(
            lambda: observer.job(job.uid) and observer.job(job.uid).final_condition == "Succeeded",
            timeout=WAIT,
            what="the TFJob to succeed while the triggerer is down",
        )
        assert rest.task_instance(dag_id, run_id, "train")["state"] == "deferred"
    finally:
        airflow.start("triggerer")  # also when the above failed: later tests need a triggerer

    result = succeeds_with_the_one_tfjob(full_stack, dag_id, run_id, job, try_number=1)
    assert (result["state"], result["reason"]) == ("Succeeded", "ChiefSucceeded")


def test_killed_worker_process_is_retried_and_the_retry_adopts_the_running_tfjob(
    full_stack: FullStack,
) -> None:
    rest, observer = full_stack.airflow.rest, full_stack.observer
    dag_id = "e2e_worker_killed"
    run_id, stop = trigger_held(full_stack, dag_id)
    ti = rest.wait_for_task(
        dag_id,
        run_id,
        "train",
        until=lambda ti: ti["state"] == "running" and ti.get("pid"),
        timeout=WAIT,
        what="running",
    )
    job = running_tfjob(full_stack, dag_id, run_id)
    pid = int(ti["pid"])
    # Only ever kill a process of this run: the task process descends from our scheduler (whose
    # LocalExecutor worker supervises it).  Its environment cannot tell: setproctitle overwrites it.
    scheduler = full_stack.airflow.components["scheduler"].pid
    assert pid in {child for child, _ in descendants(scheduler)}, (
        f"pid {pid} is not a task process of our scheduler ({scheduler})"
    )
    os.kill(pid, signal.SIGKILL)

    rest.wait_for_task(
        dag_id,
        run_id,
        "train",
        until=lambda ti: ti["try_number"] == 2 and ti["state"] == "running",
        timeout=WAIT,
        what="try 2 running",
    )
    stop.touch()
    succeeds_with_the_one_tfjob(full_stack, dag_id, run_id, job, try_number=2)
    (record,) = observer.jobs_named(job.name)
    assert record.annotations.get(ANNOTATION_TRY_NUMBER) == "1", "created by try 1"


def test_task_marked_failed_while_deferred_deletes_its_tfjob(full_stack: FullStack) -> None:
    rest, observer = full_stack.airflow.rest, full_stack.observer
    dag_id = "e2e_killed_while_deferred"
    run_id, _stop = trigger_held(full_stack, dag_id)
    rest.wait_for_task(
        dag_id, run_id, "train", until=lambda ti: ti["state"] == "deferred", timeout=WAIT, what="deferred"
    )
    job = running_tfjob(full_stack, dag_id, run_id)
    wait_for_trigger_started(full_stack, dag_id, run_id)

    rest.set_task_state(dag_id, run_id, "train", "failed")

    eventually(
        lambda: observer.job(job.uid) and observer.job(job.uid).deleted,
        timeout=60,
        what="the TFJob to be deleted by the trigger's on_kill",
    )
    assert rest.task_instance(dag_id, run_id, "train")["state"] == "failed"
    rows = observer.replica_rows(job.uid)
    assert rows and all(row.note for row in rows), f"the replicas were stopped, not finished: {rows}"


def test_example_dags_end_as_the_demo_promises(full_stack: FullStack) -> None:
    from tests.e2e.example_outcomes import example_results

    results, reruns = example_results(full_stack, timeout=WAIT * 2)
    for note in reruns:
        print(f"re-run: {note}")  # shown with -rP, and in the report of a failure
    failed: dict[str, Any] = {
        result.evidence.scenario.key: result.problems for result in results if result.problems
    }
    assert failed == {}, f"re-runs: {reruns}"
