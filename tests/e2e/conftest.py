"""The full stack for the end-to-end tests: the sandbox CLI, Airflow's four components, an observer.

One stack per test module: starting Airflow's processes costs half a minute on two cores.  The
example DAGs are triggered as soon as they are parsed, so they run while the fault tests do their
work; the test that checks their outcomes waits for them.  On the way out — passing or failing —
every process is stopped by PID, and anything of the run still alive afterwards (found by the run
marker or by working inside the run's directory) is killed and fails the module.
"""

from __future__ import annotations

import datetime
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from demo.airflow_setup import EXAMPLE_DAGS, example_variables
from demo.observer import ClusterObserver
from demo.processes import (
    ProcessGroupSet,
    StrayProcess,
    new_run_marker,
    no_process_left_behind,
)
from demo.sandbox_process import RunningSandbox, start_sandbox
from demo.scenarios import SCENARIOS
from tests.e2e.airflow_stack import AirflowStack

E2E_DAGS = Path(__file__).with_name("e2e_dags.py")
#: Seconds a scheduled pod waits before its containers start (an image pull, on a real node).
STARTUP_SECONDS = 5.0
EXAMPLE_DAG_IDS = tuple(dict.fromkeys(scenario.dag_id for scenario in SCENARIOS))
# DAGs the scheduler starts from the examples' asset events (unpaused at creation, never triggered here).
CONSUMER_DAG_IDS = tuple(s.triggers[0] for s in SCENARIOS if s.triggers is not None)
E2E_DAG_IDS = ("e2e_triggerer_restart", "e2e_worker_killed", "e2e_killed_while_deferred")


@dataclass
class FullStack:
    root: Path
    sandbox: RunningSandbox
    airflow: AirflowStack
    observer: ClusterObserver
    logical_date: str
    example_runs: dict[str, str] = field(default_factory=dict)

    def stop_file(self, name: str) -> Path:
        """A fresh path whose creation lets a held TFJob finish."""
        directory = self.root / "stops"
        directory.mkdir(exist_ok=True)
        return directory / name


@pytest.fixture(scope="module")
def full_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FullStack]:
    root = tmp_path_factory.mktemp("e2e")
    marker = new_run_marker()
    strays: list[StrayProcess] = []
    with (
        no_process_left_behind(marker=marker, directory=root, report=strays),
        ProcessGroupSet(marker=marker) as processes,
    ):
        # Pods start 5 s after scheduling, as after an image pull: with the workers' 1 s wake-up
        # below, every trigger fires well after the scheduler has drained the deferring worker's
        # exit event (Airflow 3.3's stale defer-exit race; see docs/guides/examples.md).
        sandbox = start_sandbox(
            processes, directory=root / "sandbox", env=dict(os.environ), pod_start_delay=STARTUP_SECONDS
        )
        dags = root / "dags"
        shutil.copytree(EXAMPLE_DAGS, dags, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copyfile(E2E_DAGS, dags / E2E_DAGS.name)
        stack = AirflowStack(
            root / "airflow",
            processes=processes,
            dags_folder=dags,
            connection_uri=sandbox.connection_uri,
            # 1.5 s steps: a trigger that fires within seconds of the deferral meets an Airflow 3.3
            # scheduler race (apache/airflow#71580, #72716) that fails the resumed try; see
            # docs/guides/examples.md.  The demo (`airflow dags test`, no executor) is not affected.
            extra_env={
                **example_variables(checkpoint_dir=root / "checkpoints", step_seconds=1.5),
                # A task supervisor notices its process's exit at its next wake-up, every
                # min_heartbeat_interval (5 s by default); only then does the executor report the
                # deferral, and a trigger that fired earlier meets the race.
                "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
            },
        )
        stack.migrate()
        stack.start_all()
        with ClusterObserver(sandbox.kubeconfig) as observer:
            stack.wait_until_healthy()
            stack.wait_for_dags(EXAMPLE_DAG_IDS + CONSUMER_DAG_IDS + E2E_DAG_IDS)
            logical_date = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
            full = FullStack(
                root=root,
                sandbox=sandbox,
                airflow=stack,
                observer=observer,
                logical_date=logical_date.date().isoformat(),
            )
            for dag_id in EXAMPLE_DAG_IDS:
                full.example_runs[dag_id] = stack.rest.trigger(dag_id, logical_date=logical_date.isoformat())
            yield full
    strays.extend(processes.survivors)
    assert strays == [], f"processes left behind (killed now): {strays}"
