"""``python -m demo.asset_pair TRAINING DATE CONSUMER TASK``: a DAG, then the DAG its asset event starts.

Why not two ``airflow dags test`` runs: ``dag.test()`` does not start the DAGs scheduled on the
assets its tasks update, and a manually started consumer would have no triggering event.  So,
in one Airflow home:

1. ``airflow dags test TRAINING DATE`` — the training task's success records the asset event and
   queues the consumer (unpaused: ``[core] dags_are_paused_at_creation`` is off for this home);
2. the scheduler's own step that turns queued asset events into DagRuns
   (``SchedulerJobRunner._create_dagruns_for_dags``, what each scheduler loop runs): the consumer's
   run is ``asset_triggered`` and has consumed the training's event;
3. ``airflow tasks test CONSUMER TASK <that run>`` runs the consumer's task in that run, where
   ``triggering_asset_events`` is the event of step 1.

Steps 2 and 3 stand in for a running scheduler and executor (an api-server, a scheduler and
worker processes), which the demo does not start.  Exit status: the training's, else the first
failing step's.
"""

from __future__ import annotations

import subprocess
import sys

from demo.airflow_setup import airflow_cli


def create_asset_triggered_runs() -> None:
    """Run the scheduler's DagRun-creation step once against this home's metadata DB."""
    from airflow.jobs.job import Job
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    from airflow.utils.session import create_session
    from airflow.utils.sqlalchemy import prohibit_commit

    runner = SchedulerJobRunner(job=Job())
    with create_session() as session, prohibit_commit(session) as guard:
        runner._create_dagruns_for_dags(guard, session)


def latest_run_id(dag_id: str) -> str | None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        run = session.query(DagRun).filter(DagRun.dag_id == dag_id).order_by(DagRun.id.desc()).first()
        return None if run is None else str(run.run_id)


def main(argv: list[str]) -> int:
    training, date, consumer, task_id = argv
    trained = subprocess.run([*airflow_cli(), "dags", "test", training, date], check=False).returncode
    print(f"asset pair: `airflow dags test {training}` exited {trained}", flush=True)
    create_asset_triggered_runs()
    run_id = latest_run_id(consumer)
    if run_id is None:
        print(f"asset pair: no run of {consumer} was created from the asset events", flush=True)
        return trained or 1
    print(f"asset pair: the scheduler created {consumer} run {run_id}", flush=True)
    tested = subprocess.run([*airflow_cli(), "tasks", "test", consumer, task_id, run_id], check=False)
    return trained or tested.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
