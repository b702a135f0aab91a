"""``make demo``: the example DAGs against the sandbox cluster with ``airflow dags test``, then a summary.

Why it is built this way:

* **Real processes, real interfaces.**  The sandbox is started through its CLI (HTTPS, its own
  process group); Airflow reaches it only through ``AIRFLOW_CONN_KUBERNETES_DEFAULT`` and the
  kubeconfig; every DAG runs in ``airflow dags test``, which runs deferrable tasks' triggers
  inline and — with a short ``[core] default_task_retry_delay`` — Airflow's retries too, so the
  retry scenario honestly shows try 2.
* **Side by side, under two minutes.**  The four DAG runs go in parallel.  SQLite takes one
  writer at a time, so the DB is migrated once and each DAG runs on its own copy of it.
* **Independent evidence.**  A :class:`~demo.observer.ClusterObserver` watches the
  cluster from the start, because the operator deletes TFJobs (and pods) it is done with; Airflow's
  own records give task states, tries and XComs.
* **Nothing left behind.**  All processes carry a run marker; after the sandbox is stopped the
  run's directory and marker are searched for leftovers, which are killed and fail the demo.
"""

from __future__ import annotations

import datetime
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from demo.airflow_setup import (
    EXAMPLE_DAGS,
    airflow_cli,
    airflow_environment,
    copy_database,
    example_variables,
    migrate_database,
)
from demo.observer import ClusterObserver
from demo.outcomes import XCOM_TFJOB_FAILURE, XCOM_TFJOB_NAME, read_run, read_triggered_run, read_xcom
from demo.processes import (
    RUN_MARKER,
    ManagedProcess,
    ProcessGroupSet,
    StrayProcess,
    new_run_marker,
    no_process_left_behind,
)
from demo.sandbox_process import start_sandbox
from demo.scenarios import SCENARIOS, Attempt, Evidence, Scenario, build_attempts, evaluate
from demo.summary import ScenarioResult, render_summary
from tfjob_provider.naming import job_name_for

#: Seconds between retries: Airflow's default is 300; the demo shows the retry, not the wait.
DEMO_RETRY_DELAY = "1"


@dataclass
class DemoSettings:
    """How the demo runs.

    :param workdir: everything of the run (sandbox, Airflow homes, logs, checkpoints); emptied first.
    :param step_seconds: the trainer's seconds per step (real-cluster default: 1).
    :param dag_timeout: seconds one ``airflow dags test`` may take before it counts as failed.
    :param dags_folder: the example DAGs.
    :param scenarios: which scenarios to run (all by default); their DAGs are run once each.
    :param tf_python: an interpreter with TensorFlow (``make demo-tf``: ``.venv-tf/bin/python``):
        the replicas run real TensorFlow on a loopback-TF_CONFIG sandbox.
    """

    workdir: Path
    step_seconds: float = 0.25
    dag_timeout: float = 240.0
    dags_folder: Path = EXAMPLE_DAGS
    scenarios: Sequence[Scenario] = field(default_factory=lambda: SCENARIOS)
    tf_python: Path | None = None
    logical_date: str = field(
        default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    )


@dataclass
class DagTestRun:
    dag_id: str
    home: Path
    log_path: Path
    process: ManagedProcess | None = None
    exit_status: int | None = None
    seconds: float = 0.0
    timed_out: bool = False
    triggers: tuple[str, str] | None = None

    @property
    def database(self) -> Path:
        return self.home / "airflow.db"


@dataclass
class DemoReport:
    results: list[ScenarioResult]
    strays: list[StrayProcess]
    seconds: float
    summary: str

    @property
    def ok(self) -> bool:
        return all(result.passed for result in self.results) and not self.strays


def _say(out: TextIO, text: str) -> None:
    print(text, file=out, flush=True)


def _attempts(
    scenario: Scenario, *, run: DagTestRun, run_id: str, observer: ClusterObserver, result: Any
) -> tuple[list[Attempt], list[str]]:
    """The TFJobs the scenario's submitting task created, each with its verdict (see
    :func:`~demo.scenarios.build_attempts`)."""

    def xcom(key: str, task_id: str = scenario.task_id) -> Any:
        return read_xcom(run.database, dag_id=scenario.dag_id, run_id=run_id, task_id=task_id, key=key)

    submitting = scenario.submitting_task
    name = xcom(XCOM_TFJOB_NAME, submitting) or job_name_for(
        dag_id=scenario.dag_id, task_id=submitting, run_id=run_id, map_index=-1
    )
    log_text = run.log_path.read_text(errors="replace") if run.log_path.exists() else ""
    return build_attempts(
        observer, job_name=str(name), result=result, last_failure=xcom(XCOM_TFJOB_FAILURE), log_text=log_text
    )


def gather_evidence(
    scenario: Scenario, *, run: DagTestRun, observer: ClusterObserver, logical_date: str
) -> Evidence:
    """Airflow's records, the task log's verdicts and the observer's TFJobs for one scenario."""
    problems: list[str] = []
    if run.timed_out:
        problems.append(f"airflow dags test {scenario.dag_id} did not finish within the time limit")
    record = read_run(run.database, scenario.dag_id) if run.database.exists() else None
    if record is None:
        return Evidence(scenario, None, None, [], None, logical_date=logical_date, problems_running=problems)
    result = read_xcom(
        run.database,
        dag_id=scenario.dag_id,
        run_id=record.run_id,
        task_id=scenario.task_id,
        key=scenario.result_key,
    )
    attempts, more = _attempts(scenario, run=run, run_id=record.run_id, observer=observer, result=result)
    related = {task_id: task for task_id, task in record.tasks.items() if task_id != scenario.task_id}
    related_results = {
        task_id: read_xcom(run.database, dag_id=scenario.dag_id, run_id=record.run_id, task_id=task_id)
        for task_id in related
    }
    triggered = (
        read_triggered_run(run.database, dag_id=scenario.triggers[0], task_id=scenario.triggers[1])
        if scenario.triggers
        else None
    )
    return Evidence(
        scenario=scenario,
        triggered=triggered,
        run=record,
        task=record.tasks.get(scenario.task_id),
        attempts=attempts,
        result=result if isinstance(result, dict) else None,
        related=related,
        related_results=related_results,
        logical_date=logical_date,
        problems_running=problems + more,
    )


def _run_dags(
    runs: list[DagTestRun],
    *,
    processes: ProcessGroupSet,
    env_for: Callable[[DagTestRun], dict[str, str]],
    settings: DemoSettings,
    out: TextIO,
) -> None:
    """Start every ``airflow dags test`` at once and wait for all (each within ``dag_timeout``)."""
    for run in runs:
        command = [*airflow_cli(), "dags", "test", run.dag_id, settings.logical_date]
        if run.triggers is not None:  # the DAG and the one its asset event starts
            command = [
                sys.executable,
                "-m",
                "demo.asset_pair",
                run.dag_id,
                settings.logical_date,
                *run.triggers,
            ]
        run.process = processes.start(
            f"dags-test-{run.dag_id}",
            command,
            env=env_for(run),
            cwd=run.home,
            log_path=run.log_path,
        )
        run.seconds = time.monotonic()
    pending = list(runs)
    while pending:
        for run in list(pending):
            assert run.process is not None
            elapsed = time.monotonic() - run.seconds
            # The asset pair is three Airflow commands (demo.asset_pair): twice the time.
            limit = settings.dag_timeout * (2 if run.triggers else 1)
            if run.process.alive() and elapsed < limit:
                continue
            if run.process.alive():
                run.timed_out = True
            run.exit_status = run.process.stop(grace=5)
            run.seconds = elapsed
            pending.remove(run)
            ending = {0: "the DAG run succeeded", 1: "the DAG run failed"}.get(
                run.exit_status if run.exit_status is not None else -1, f"exit status {run.exit_status}"
            )
            _say(out, f"  {run.dag_id}: `airflow dags test` finished in {elapsed:.0f}s ({ending})")
        time.sleep(0.2)


def run_demo(settings: DemoSettings, *, out: TextIO = sys.stdout) -> DemoReport:
    """Run every scenario's DAG once, judge the scenarios, and render the summary."""
    started = time.monotonic()
    workdir = settings.workdir.resolve()
    if workdir.exists():
        shutil.rmtree(workdir)
    (workdir / "logs").mkdir(parents=True)
    marker = new_run_marker()
    strays: list[StrayProcess] = []
    results: list[ScenarioResult] = []
    title = ""
    with (
        no_process_left_behind(marker=marker, directory=workdir, report=strays),
        ProcessGroupSet(marker=marker) as processes,
    ):
        _say(out, f"tfjob_provider demo — working in {workdir}")
        sandbox_start = time.monotonic()
        sandbox = start_sandbox(
            processes,
            directory=workdir / "sandbox",
            env=dict(os.environ),
            loopback_tf_config=settings.tf_python is not None,
        )
        _say(out, f"  sandbox cluster ready at {sandbox.url} ({time.monotonic() - sandbox_start:.1f}s)")
        variables = example_variables(
            checkpoint_dir=workdir / "checkpoints",
            step_seconds=settings.step_seconds,
            tf_python=settings.tf_python,
        )
        extra = {
            **variables,
            "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": DEMO_RETRY_DELAY,
            # An asset event queues a run only of an unpaused DAG (demo.asset_pair).
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        }

        def env_for_home(home: Path) -> dict[str, str]:
            return {
                **airflow_environment(
                    home, dags_folder=settings.dags_folder, connection_uri=sandbox.connection_uri, extra=extra
                ),
                RUN_MARKER: marker,  # also on `airflow db migrate`, which is not started as a group
            }

        template_home = workdir / "airflow" / "template"
        migrate_start = time.monotonic()
        migrate_database(env_for_home(template_home), log_path=workdir / "logs" / "airflow-db-migrate.log")
        _say(out, f"  Airflow metadata DB migrated ({time.monotonic() - migrate_start:.1f}s)")

        dag_ids = list(dict.fromkeys(scenario.dag_id for scenario in settings.scenarios))
        triggers = {
            scenario.dag_id: scenario.triggers for scenario in settings.scenarios if scenario.triggers
        }
        runs = [
            DagTestRun(
                dag_id=dag_id,
                home=workdir / "airflow" / dag_id,
                log_path=workdir / "logs" / f"{dag_id}.log",
                triggers=triggers.get(dag_id),
            )
            for dag_id in dag_ids
        ]
        for run in runs:
            copy_database(template_home, run.home)
        with ClusterObserver(sandbox.kubeconfig) as observer:
            _say(
                out,
                f"  running {len(runs)} DAGs with `airflow dags test` (logical date {settings.logical_date})",
            )
            _run_dags(
                runs,
                processes=processes,
                env_for=lambda run: env_for_home(run.home),
                settings=settings,
                out=out,
            )
            time.sleep(0.5)  # the last watch events (pod deletions) arrive within milliseconds
            by_dag = {run.dag_id: run for run in runs}
            for scenario in settings.scenarios:
                evidence = gather_evidence(
                    scenario,
                    run=by_dag[scenario.dag_id],
                    observer=observer,
                    logical_date=settings.logical_date,
                )
                results.append(ScenarioResult(evidence=evidence, problems=evaluate(evidence)))
            if observer.errors:
                _say(out, f"  (the cluster observer saw {len(observer.errors)} transient watch errors)")
        title = f"tfjob_provider demo — sandbox cluster {sandbox.url}; Airflow `airflow dags test`"
        statuses = processes.stop_all()
        _say(out, f"  sandbox stopped (exit status {statuses.get('sandbox')})")
    strays.extend(processes.survivors)
    seconds = time.monotonic() - started
    notes = [f"Logs: {workdir / 'logs'} (one per DAG; pod logs under {workdir / 'sandbox' / 'pods'})"]
    if strays:
        notes.append(
            "Processes left behind (killed now): "
            + "; ".join(f"{s.pid} {s.command[:80]} ({s.why})" for s in strays)
        )
    else:
        notes.append("No process left behind: the sandbox, its pods and every Airflow process have exited.")
    notes.append(f"Demo took {seconds:.0f}s.")
    summary = render_summary(results, title=title, notes=notes)
    return DemoReport(results=results, strays=strays, seconds=seconds, summary=summary)
